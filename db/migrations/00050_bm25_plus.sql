-- canon_bm25 gains two named parameters of the classic BM25 family, each off at
-- the value that reproduces the formula of migration 00007:
--   delta (BM25+, Lv and Zhai 2011): a matched term is worth at least
--     idf · delta, so length normalisation never pushes a long chunk that
--     contains the term below a short chunk that does not; 0 is plain BM25.
--   k3 (Robertson's query-term saturation): a term repeated in the question
--     counts (k3 + 1) · qtf / (k3 + qtf) times, so one word a long question
--     repeats does not outweigh the rest; 0 counts qtf linearly (Lucene).
--
--   idf · qtf' · ((tf' · (k1 + 1)) / (tf' + k1 · (1 − b + b · length / avgdl)) + delta)

-- +goose Up
DROP FUNCTION canon_bm25(integer, integer, integer, float8, float8, float8, float8, float8, float8);

-- +goose StatementBegin
CREATE FUNCTION canon_bm25(tf integer, tf_heading integer, length integer, idf float8, qtf float8,
                           k1 float8, b float8, heading_boost float8, avgdl float8,
                           delta float8, k3 float8) RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT idf * CASE WHEN k3 > 0 THEN (k3 + 1) * qtf / (k3 + qtf) ELSE qtf END
           * (((tf + heading_boost * tf_heading) * (k1 + 1))
              / ((tf + heading_boost * tf_heading) + k1 * (1 - b + b * length / avgdl))
              + delta)
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION canon_bm25(integer, integer, integer, float8, float8, float8, float8, float8, float8, float8, float8);

-- +goose StatementBegin
CREATE FUNCTION canon_bm25(tf integer, tf_heading integer, length integer, idf float8, qtf float8,
                           k1 float8, b float8, heading_boost float8, avgdl float8) RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT idf * qtf * ((tf + heading_boost * tf_heading) * (k1 + 1))
           / ((tf + heading_boost * tf_heading) + k1 * (1 - b + b * length / avgdl))
$$;
-- +goose StatementEnd
