-- canon_analyze_stale analyses, at once, the tables holding a project's rows
-- whose statistics autovacuum would refresh on its next round: never analysed,
-- or changed by more than autovacuum_analyze_threshold + _scale_factor × rows
-- since. An ingest reads its rows back straight away (the entity-mention
-- rebuild, then the first questions), sooner than autovacuum's next visit, and
-- a plan made without statistics is a bad one: after a first load of 20,000
-- chunks the mention rebuild probed chunks through its project index instead of
-- the tsv GIN index, one full pass per entity name (12 s instead of 0.3 s).
-- In the partitioned layout it analyses the project's partitions.
-- Returns the relations it analysed.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION canon_analyze_stale(project_id bigint) RETURNS text[] LANGUAGE plpgsql AS $$
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

-- +goose Down
DROP FUNCTION canon_analyze_stale(bigint);
