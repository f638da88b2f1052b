-- The BM25 weight of one query term in one chunk, written once: the ranking
-- statement computes it in five places (search.sql: the keyword leg's branches,
-- the exact rescoring of candidates, the per-term explain). A single-expression
-- SQL function is inlined by the planner, so the statements run exactly as if the
-- formula were spelled out in each of them.
--
--   idf · qtf · (tf' · (k1 + 1)) / (tf' + k1 · (1 − b + b · length / avgdl))
--   where tf' = tf + heading_boost · tf_heading (occurrences in the title and
--   heading path count heading_boost times)

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION canon_bm25(tf integer, tf_heading integer, length integer, idf float8, qtf float8,
                           k1 float8, b float8, heading_boost float8, avgdl float8) RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT idf * qtf * ((tf + heading_boost * tf_heading) * (k1 + 1))
           / ((tf + heading_boost * tf_heading) + k1 * (1 - b + b * length / avgdl))
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION canon_bm25;
