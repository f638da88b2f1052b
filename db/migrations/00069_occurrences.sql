-- canon_occurrences: how many times a lower-case form occurs in a text, case
-- folded; the strength of a body mention (MentionRebuildText and
-- MentionRebuildTextOf). A single expression, so the planner inlines it.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION canon_occurrences(body text, form text) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT (length(lower(body)) - length(replace(lower(body), form, ''))) / length(form)
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION canon_occurrences(text, text);
