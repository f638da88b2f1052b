-- Impact-ordered postings, for the approximate keyword leg and for exact rescoring.
--
-- Exact BM25 reads every posting of every query term: a common term at 100,000
-- chunks has tens of thousands. Each posting now carries an impact, the term's
-- BM25 weight in that chunk without the idf (which is the same for the whole
-- list), and the lexeme index is ordered by it, so "the N chunks where this term
-- weighs most" is the first N entries of one index range. The approximate leg
-- takes those as its candidates; every candidate's BM25 is then recomputed
-- exactly from its own postings through the (chunk_id, lexeme) index, so only
-- which chunks are considered is approximate, never a score.
--
-- The impact uses a reference k1 = 1.2, b = 0.75, heading boost 1 and the
-- project's average chunk length when the chunk was written: it only orders a
-- term's postings (a query's own k1, b and heading boost change the scores, not
-- this order, except between chunks of very different lengths).

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION canon_bm25_impact(tf integer, length integer, avgdl float8) RETURNS real
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT (tf * (1.2 + 1) / (tf + 1.2 * (1 - 0.75 + 0.75 * length / greatest(avgdl, 1))))::real
$$;
-- +goose StatementEnd

ALTER TABLE postings ADD COLUMN impact real NOT NULL DEFAULT 0;

UPDATE postings p
SET impact = canon_bm25_impact(p.tf + p.tf_heading, p.length,
                               s.total_length::float8 / greatest(s.chunk_count, 1))
FROM project_stats s
WHERE s.project_id = p.project_id;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION chunks_postings() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO postings (project_id, lexeme, chunk_id, tf, tf_heading, length, impact)
    SELECT c.project_id, u.lexeme, c.id,
           cardinality(u.positions) - cardinality(array_positions(u.weights, 'A')),
           cardinality(array_positions(u.weights, 'A')),
           c.length,
           canon_bm25_impact(cardinality(u.positions), c.length, a.avgdl)
    FROM new_rows c
    -- The project's average length before this statement (chunks_stats runs
    -- after this trigger), or this statement's own for a project's first rows.
    JOIN (SELECT r.project_id,
                 coalesce((SELECT s.total_length::float8 / nullif(s.chunk_count, 0)
                           FROM project_stats s WHERE s.project_id = r.project_id),
                          avg(r.length)) AS avgdl
          FROM new_rows r GROUP BY r.project_id) a ON a.project_id = c.project_id
    CROSS JOIN LATERAL unnest(c.tsv) u;
    RETURN NULL;
END $$;
-- +goose StatementEnd

DROP INDEX postings_lexeme;
CREATE INDEX postings_lexeme_impact ON postings (project_id, lexeme, impact DESC)
    INCLUDE (chunk_id, tf, tf_heading, length);
DROP INDEX postings_chunk;
CREATE INDEX postings_chunk_lexeme ON postings (chunk_id, lexeme) INCLUDE (tf, tf_heading, length);

-- +goose Down
DROP INDEX postings_chunk_lexeme;
CREATE INDEX postings_chunk ON postings (chunk_id);
DROP INDEX postings_lexeme_impact;
CREATE INDEX postings_lexeme ON postings (project_id, lexeme) INCLUDE (chunk_id, tf, tf_heading, length);

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION chunks_postings() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO postings (project_id, lexeme, chunk_id, tf, tf_heading, length)
    SELECT c.project_id, u.lexeme, c.id,
           cardinality(u.positions) - cardinality(array_positions(u.weights, 'A')),
           cardinality(array_positions(u.weights, 'A')),
           c.length
    FROM new_rows c, unnest(c.tsv) u;
    RETURN NULL;
END $$;
-- +goose StatementEnd

ALTER TABLE postings DROP COLUMN impact;
DROP FUNCTION canon_bm25_impact;
