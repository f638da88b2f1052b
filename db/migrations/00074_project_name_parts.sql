-- A project goes by its codename too: "what is the status of Relay?" names
-- "Project Relay" as "what has Dana been working on?" names "Dana Okafor". The
-- names an entity goes by in part (entities.name_parts, migration 00072) are
-- now a person's first and last names and a project's name without the word
-- "project". The stored column is rebuilt with the new function.

-- +goose Up
-- canon_entity_name_parts: lowercased, three letters or more; for a person the
-- first and last words of the name and of each alias, for a project the words of
-- the name and of each alias but "project" ("Project Relay" -> relay); none for
-- a team, whose name's words ("platform") are everyday words.
-- +goose StatementBegin
CREATE FUNCTION canon_entity_name_parts(entity_type text, name text, aliases text[]) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(DISTINCT lower(p.part) ORDER BY lower(p.part)), '{}')
    FROM unnest(array_append(aliases, name)) AS n (form)
    CROSS JOIN LATERAL (
        SELECT split_part(n.form, ' ', 1) WHERE entity_type = 'person'
        UNION ALL
        SELECT split_part(n.form, ' ', -1) WHERE entity_type = 'person'
        UNION ALL
        SELECT w FROM regexp_split_to_table(n.form, '\s+') AS w
        WHERE entity_type = 'project' AND lower(w) <> 'project'
    ) AS p (part)
    WHERE length(p.part) >= 3
$$;
-- +goose StatementEnd

ALTER TABLE entities DROP COLUMN name_parts;
ALTER TABLE entities
    ADD COLUMN name_parts text[] NOT NULL
    GENERATED ALWAYS AS (canon_entity_name_parts(entity_type, name, aliases)) STORED;
DROP FUNCTION canon_person_name_parts(text, text, text[]);

-- +goose Down
-- +goose StatementBegin
CREATE FUNCTION canon_person_name_parts(entity_type text, name text, aliases text[]) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(DISTINCT lower(p.part) ORDER BY lower(p.part)), '{}')
    FROM unnest(array_append(aliases, name)) AS n (form)
    CROSS JOIN LATERAL (VALUES (split_part(n.form, ' ', 1)), (split_part(n.form, ' ', -1))) AS p (part)
    WHERE entity_type = 'person' AND length(p.part) >= 3
$$;
-- +goose StatementEnd
ALTER TABLE entities DROP COLUMN name_parts;
ALTER TABLE entities
    ADD COLUMN name_parts text[] NOT NULL
    GENERATED ALWAYS AS (canon_person_name_parts(entity_type, name, aliases)) STORED;
DROP FUNCTION canon_entity_name_parts(text, text, text[]);
