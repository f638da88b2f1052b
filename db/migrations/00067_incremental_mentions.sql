-- Body mentions of entities are rebuilt per document when a change leaves the
-- project's entities as they were. The batch that writes a document records it
-- in mentions_pending; the rebuild after the ingest reads those documents'
-- chunks only (MentionRebuildTextOf) and deletes their rows. When an entity page
-- changed (projects.mentions_stale, migration 00031) every document's mentions
-- may change, and the rebuild reads them all, as before. A run killed before its
-- rebuild leaves its rows to the next one. A table of its own, not a column of
-- documents: the rebuild would otherwise write every document it read again.
--
-- canon_analyze_stale (migration 00065) covers the new table: the rebuild joins
-- it to the documents it read.
--
-- canon_entity_surfaces is the one definition of the names an entity goes by,
-- for both rebuilds: its name, its aliases and, for people, a first name no
-- other person in the project shares.

-- +goose Up
CREATE TABLE mentions_pending (
    project_id  bigint NOT NULL,
    document_id bigint NOT NULL,
    PRIMARY KEY (project_id, document_id),
    FOREIGN KEY (project_id, document_id) REFERENCES documents (project_id, id) ON DELETE CASCADE
);

-- +goose StatementBegin
CREATE FUNCTION canon_entity_surfaces(project_id bigint) RETURNS TABLE (slug text, document_id bigint, form text)
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT e.slug, e.document_id, lower(n)
    FROM entities e, unnest(array_append(e.aliases, e.name)) n
    WHERE e.project_id = canon_entity_surfaces.project_id AND length(n) >= 3
    UNION
    SELECT e.slug, e.document_id, lower(split_part(e.name, ' ', 1))
    FROM entities e
    WHERE e.project_id = canon_entity_surfaces.project_id AND e.entity_type = 'person'
      AND length(split_part(e.name, ' ', 1)) >= 3
      AND NOT EXISTS (SELECT 1 FROM entities o
                      WHERE o.project_id = e.project_id AND o.id <> e.id AND o.entity_type = 'person'
                        AND lower(split_part(o.name, ' ', 1)) = lower(split_part(e.name, ' ', 1)))
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION canon_analyze_stale(project_id bigint) RETURNS text[] LANGUAGE plpgsql AS $$
DECLARE
    rel regclass;
    analyzed text[] := '{}';
BEGIN
    FOR rel IN
        SELECT r.rel
        FROM unnest(ARRAY['documents', 'chunks', 'postings', 'lexeme_stats', 'doc_links',
                          'kb_nodes', 'kb_edges', 'entities', 'entity_mentions', 'mentions_pending']) AS t (name)
        -- The table, or in the partitioned layout the project's partition of it.
        CROSS JOIN LATERAL (
            SELECT CASE WHEN c.relkind = 'p' THEN to_regclass(canon_partition_name(t.name, project_id))
                        ELSE c.oid::regclass END AS rel
            FROM pg_class c WHERE c.oid = to_regclass(t.name)
        ) AS r
        JOIN pg_stat_user_tables s ON s.relid = r.rel
        JOIN pg_class c ON c.oid = r.rel
        WHERE coalesce(s.last_analyze, s.last_autoanalyze) IS NULL
           OR s.n_mod_since_analyze > current_setting('autovacuum_analyze_threshold')::float8
                                      + current_setting('autovacuum_analyze_scale_factor')::float8 * greatest(c.reltuples, 0)
        ORDER BY t.name
    LOOP
        EXECUTE format('ANALYZE %s', rel);
        analyzed := analyzed || rel::text;
    END LOOP;
    RETURN analyzed;
END $$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION canon_analyze_stale(project_id bigint) RETURNS text[] LANGUAGE plpgsql AS $$
DECLARE
    rel regclass;
    analyzed text[] := '{}';
BEGIN
    FOR rel IN
        SELECT r.rel
        FROM unnest(ARRAY['documents', 'chunks', 'postings', 'lexeme_stats', 'doc_links',
                          'kb_nodes', 'kb_edges', 'entities', 'entity_mentions']) AS t (name)
        -- The table, or in the partitioned layout the project's partition of it.
        CROSS JOIN LATERAL (
            SELECT CASE WHEN c.relkind = 'p' THEN to_regclass(canon_partition_name(t.name, project_id))
                        ELSE c.oid::regclass END AS rel
            FROM pg_class c WHERE c.oid = to_regclass(t.name)
        ) AS r
        JOIN pg_stat_user_tables s ON s.relid = r.rel
        JOIN pg_class c ON c.oid = r.rel
        WHERE coalesce(s.last_analyze, s.last_autoanalyze) IS NULL
           OR s.n_mod_since_analyze > current_setting('autovacuum_analyze_threshold')::float8
                                      + current_setting('autovacuum_analyze_scale_factor')::float8 * greatest(c.reltuples, 0)
        ORDER BY t.name
    LOOP
        EXECUTE format('ANALYZE %s', rel);
        analyzed := analyzed || rel::text;
    END LOOP;
    RETURN analyzed;
END $$;
-- +goose StatementEnd

DROP FUNCTION canon_entity_surfaces(bigint);
DROP TABLE mentions_pending;
