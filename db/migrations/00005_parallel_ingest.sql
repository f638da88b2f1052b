-- Ingest stores several batches of documents at once, one transaction each, so
-- the HNSW and postings inserts of one batch (most of an ingest's time) run
-- beside another's. Two things stood in the way:
--
-- 1. The BM25 statistics (lexeme_stats, project_stats) are shared rows: every
--    batch updates the common lexemes of its project. Row locks taken by
--    separate statements of one transaction come in no global order, so two
--    batches could deadlock. Every trigger that writes them now first takes one
--    transaction-level advisory lock per project: statistics writes of a project
--    serialise (a few milliseconds at the end of a batch), everything before
--    them runs in parallel, and lock order is always project lock, then rows.
-- 2. Statement triggers fire even for statements that touched no row (deleting
--    the old chunks of a new document). Those now return at once, so a batch of
--    new documents takes the lock only at its end, when its rows are in.
--
-- It also drops chunks_document (project_id, document_id, ordinal): the unique
-- (document_id, ordinal) index serves every lookup by document, and a second
-- index cost each chunk insert.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION canon_lock_stats(project_ids bigint[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    pid bigint;
BEGIN
    -- Sorted, so two transactions never wait on each other's projects in turn.
    FOR pid IN SELECT DISTINCT u FROM unnest(project_ids) u ORDER BY u LOOP
        PERFORM pg_advisory_xact_lock(hashtextextended('canon.stats', pid));
    END LOOP;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION postings_stats_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT FROM new_rows) THEN
        RETURN NULL;
    END IF;
    PERFORM canon_lock_stats(ARRAY(SELECT DISTINCT project_id FROM new_rows));
    INSERT INTO lexeme_stats (project_id, lexeme, df)
    SELECT project_id, lexeme, count(*) FROM new_rows
    GROUP BY project_id, lexeme ORDER BY project_id, lexeme
    ON CONFLICT (project_id, lexeme) DO UPDATE SET df = lexeme_stats.df + excluded.df;
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION postings_stats_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT FROM old_rows) THEN
        RETURN NULL;
    END IF;
    PERFORM canon_lock_stats(ARRAY(SELECT DISTINCT project_id FROM old_rows));
    UPDATE lexeme_stats s SET df = s.df - d.n
    FROM (SELECT project_id, lexeme, count(*) AS n FROM old_rows
          GROUP BY project_id, lexeme ORDER BY project_id, lexeme) d
    WHERE s.project_id = d.project_id AND s.lexeme = d.lexeme;
    DELETE FROM lexeme_stats s USING (SELECT DISTINCT project_id, lexeme FROM old_rows) d
    WHERE s.project_id = d.project_id AND s.lexeme = d.lexeme AND s.df <= 0;
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION chunks_stats() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NOT EXISTS (SELECT FROM new_rows) THEN
            RETURN NULL;
        END IF;
        PERFORM canon_lock_stats(ARRAY(SELECT DISTINCT project_id FROM new_rows));
        INSERT INTO project_stats (project_id, chunk_count, total_length)
        SELECT project_id, count(*), sum(length) FROM new_rows GROUP BY project_id ORDER BY project_id
        ON CONFLICT (project_id) DO UPDATE SET
            chunk_count = project_stats.chunk_count + excluded.chunk_count,
            total_length = project_stats.total_length + excluded.total_length;
    ELSE
        IF NOT EXISTS (SELECT FROM old_rows) THEN
            RETURN NULL;
        END IF;
        PERFORM canon_lock_stats(ARRAY(SELECT DISTINCT project_id FROM old_rows));
        UPDATE project_stats s SET chunk_count = s.chunk_count - d.n, total_length = s.total_length - d.len
        FROM (SELECT project_id, count(*) AS n, sum(length) AS len FROM old_rows GROUP BY project_id) d
        WHERE s.project_id = d.project_id;
    END IF;
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION chunks_postings_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT FROM old_rows) THEN
        RETURN NULL;
    END IF;
    DELETE FROM postings p USING old_rows o WHERE p.chunk_id = o.id;
    RETURN NULL;
END $$;
-- +goose StatementEnd

DROP INDEX chunks_document;

-- +goose Down
CREATE INDEX chunks_document ON chunks (project_id, document_id, ordinal);

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION chunks_postings_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM postings p USING old_rows o WHERE p.chunk_id = o.id;
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION chunks_stats() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO project_stats (project_id, chunk_count, total_length)
        SELECT project_id, count(*), sum(length) FROM new_rows GROUP BY project_id ORDER BY project_id
        ON CONFLICT (project_id) DO UPDATE SET
            chunk_count = project_stats.chunk_count + excluded.chunk_count,
            total_length = project_stats.total_length + excluded.total_length;
    ELSE
        UPDATE project_stats s SET chunk_count = s.chunk_count - d.n, total_length = s.total_length - d.len
        FROM (SELECT project_id, count(*) AS n, sum(length) AS len FROM old_rows GROUP BY project_id) d
        WHERE s.project_id = d.project_id;
    END IF;
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION postings_stats_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE lexeme_stats s SET df = s.df - d.n
    FROM (SELECT project_id, lexeme, count(*) AS n FROM old_rows
          GROUP BY project_id, lexeme ORDER BY project_id, lexeme) d
    WHERE s.project_id = d.project_id AND s.lexeme = d.lexeme;
    DELETE FROM lexeme_stats s USING (SELECT DISTINCT project_id, lexeme FROM old_rows) d
    WHERE s.project_id = d.project_id AND s.lexeme = d.lexeme AND s.df <= 0;
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION postings_stats_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO lexeme_stats (project_id, lexeme, df)
    SELECT project_id, lexeme, count(*) FROM new_rows
    GROUP BY project_id, lexeme ORDER BY project_id, lexeme
    ON CONFLICT (project_id, lexeme) DO UPDATE SET df = lexeme_stats.df + excluded.df;
    RETURN NULL;
END $$;
-- +goose StatementEnd

DROP FUNCTION canon_lock_stats;
