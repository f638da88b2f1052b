-- A person's first and last names, from the name and each alias, stored with the
-- entity: pass 1 of the two-pass search (EntityRank) looks for them in every
-- question, and deriving them per question over all of a project's people was a
-- fifth of that statement (issue #20).

-- +goose Up
-- canon_person_name_parts: the lowercased first and last words of a person's
-- name and aliases, three letters or more ("Ines" of the alias "Ines Moreau", a
-- nickname alias "Sammy"; initials such as "P." are too short); none for a
-- team or a project.
-- +goose StatementBegin
CREATE FUNCTION canon_person_name_parts(entity_type text, name text, aliases text[]) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(DISTINCT lower(p.part) ORDER BY lower(p.part)), '{}')
    FROM unnest(array_append(aliases, name)) AS n (form)
    CROSS JOIN LATERAL (VALUES (split_part(n.form, ' ', 1)), (split_part(n.form, ' ', -1))) AS p (part)
    WHERE entity_type = 'person' AND length(p.part) >= 3
$$;
-- +goose StatementEnd

ALTER TABLE entities
    ADD COLUMN name_parts text[] NOT NULL
    GENERATED ALWAYS AS (canon_person_name_parts(entity_type, name, aliases)) STORED;

-- +goose Down
ALTER TABLE entities DROP COLUMN name_parts;
DROP FUNCTION canon_person_name_parts(text, text, text[]);
