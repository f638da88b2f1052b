-- canon_analyze_stale (migration 00065) analyses a table whose statistics are
-- merely behind only when the caller asks (include_behind: its run wrote many
-- rows), and skips a table another session is analysing or vacuuming instead
-- of waiting for it. In the single layout every project's ingest reads the same
-- tables' statistics, so under a steady stream of small ingests one of them
-- every so often found a shared table past autovacuum's threshold and analysed
-- it in the request, and others queued behind: `canon bench load` (16 clients,
-- one ingest in ten requests) put an ingest's p99 at 1.6–2.5 s, 0.34–0.35 s with
-- this migration (bench/results/ingest-store.md). A table never analysed is
-- analysed whoever asks: that is the first load of a database, whose statistics
-- nothing else has made yet.

-- +goose Up
DROP FUNCTION canon_analyze_stale(bigint);

-- +goose StatementBegin
CREATE FUNCTION canon_analyze_stale(project_id bigint, include_behind boolean) RETURNS text[] LANGUAGE plpgsql AS $$
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
           OR include_behind
              AND s.n_mod_since_analyze > current_setting('autovacuum_analyze_threshold')::float8
                                          + current_setting('autovacuum_analyze_scale_factor')::float8 * greatest(c.reltuples, 0)
        ORDER BY t.name
    LOOP
        EXECUTE format('ANALYZE (SKIP_LOCKED) %s', rel);
        analyzed := analyzed || rel::text;
    END LOOP;
    RETURN analyzed;
END $$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION canon_analyze_stale(bigint, boolean);

-- +goose StatementBegin
CREATE FUNCTION canon_analyze_stale(project_id bigint) RETURNS text[] LANGUAGE plpgsql AS $$
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
