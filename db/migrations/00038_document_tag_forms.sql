-- Pass 2 of the two-pass search links an entity to the documents tagged with it
-- (EntityLinks in db/queries/entity_search.sql), comparing each tag lowercased,
-- spaces as hyphens. Computed per document on every request, that scanned every
-- document of the project (59 of EntityLinks' 98 ms on the 100,000-chunk latency
-- corpus); the forms are now a function an inverted index holds.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION canon_tag_forms(tags text[]) RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(replace(lower(t.tag), ' ', '-')), '{}') FROM unnest(tags) AS t (tag)
$$;
-- +goose StatementEnd

CREATE INDEX documents_tag_forms ON documents USING gin (canon_tag_forms(tags));

-- +goose Down
DROP INDEX documents_tag_forms;
DROP FUNCTION canon_tag_forms(text[]);
