-- The approximate keyword leg reads each query term's first bm25_term_limit
-- postings in impact order. Postings of equal impact (chunks with the same tf
-- and length) sat in the index in heap order, so which of them the leg read at
-- the limit depended on where they were on disk: an update of a chunk, a
-- restore or a reload of the same corpus could change the candidates, and with
-- them the ranking. The chunk id now breaks those ties, in the index and in the
-- statement's ORDER BY. Rebuilding the index took 21 s at 7.2 million postings.

-- +goose Up
DROP INDEX postings_lexeme_impact;
CREATE INDEX postings_lexeme_impact ON postings (project_id, lexeme, impact DESC, chunk_id)
    INCLUDE (tf, tf_heading, length);

-- +goose Down
DROP INDEX postings_lexeme_impact;
CREATE INDEX postings_lexeme_impact ON postings (project_id, lexeme, impact DESC)
    INCLUDE (chunk_id, tf, tf_heading, length);
