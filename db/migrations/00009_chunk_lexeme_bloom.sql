-- A Bloom filter of each chunk's lexemes, so the ranking statement can skip the
-- postings probes that would find nothing.
--
-- The statement completes each candidate's BM25 with the query terms the keyword
-- leg did not read for it: one index probe of postings per (candidate, term). At
-- 100,000 chunks a search made about 84 such probes and 9 of them found a
-- posting. The filter is 1,024 bits in the chunk row the statement reads anyway,
-- three bits per lexeme: a term whose bits are not all set is not in the chunk,
-- so it is not probed. A set bit only means "maybe"; the probe still decides, so
-- the scores are exactly what they were.
--
-- The bits come from hashtext, the hash behind text's hash indexes, which
-- pg_upgrade carries over as they are: it cannot change between versions without
-- breaking them. At 1,024 bits a chunk of 73 lexemes (the synthetic corpus)
-- passes for a term it lacks 0.7% of the time, one of 250 (a long chunk of
-- prose) 14%. The column is generated from tsv, so it follows every
-- insert and update (after the chunks_derive trigger has set tsv), and a restore
-- recomputes it. Adding it rewrites chunks and rebuilds its indexes: 83 s at
-- 100,000 chunks here, most of it the HNSW index. Computing it adds about 0.1 ms
-- to each chunk's insert.

-- +goose Up
-- canon_lexeme_bits: the three bits of one lexeme (ten bits of its hash each).
CREATE FUNCTION canon_lexeme_bits(lexeme text) RETURNS bit(1024)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT (B'1'::bit(1024) >> (hashtext(lexeme) & 1023))
         | (B'1'::bit(1024) >> ((hashtext(lexeme) >> 10) & 1023))
         | (B'1'::bit(1024) >> ((hashtext(lexeme) >> 20) & 1023))
$$;

CREATE FUNCTION canon_lexeme_bloom(tsv tsvector) RETURNS bit(1024)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(bit_or(canon_lexeme_bits(l)), B'0'::bit(1024)) FROM unnest(tsvector_to_array(tsv)) AS l
$$;

ALTER TABLE chunks ADD COLUMN lexeme_bloom bit(1024) GENERATED ALWAYS AS (canon_lexeme_bloom(tsv)) STORED;

-- +goose Down
ALTER TABLE chunks DROP COLUMN lexeme_bloom;
DROP FUNCTION canon_lexeme_bloom;
DROP FUNCTION canon_lexeme_bits;
