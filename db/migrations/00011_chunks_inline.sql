-- A chunk row holds its 384-d embedding (1.5 kB, storage plain: never
-- compressed or moved), its text and its tsvector: about 4 kB. PostgreSQL toasts
-- any row over 2 kB until it fits in 2 kB again, so the text and the tsvector of
-- most chunks sat compressed in the TOAST table. Every hit the ranking statement
-- returns then cost a TOAST index lookup and a decompression for its text: 0.2 ms
-- of a 6.5 ms search at 100,000 chunks, 16 of them per request.
--
-- toast_tuple_target 8160 (the largest a page allows) keeps a row whole unless it
-- does not fit in a page: chunks are 2 per page instead of 4, and the TOAST table
-- is empty. At 100,000 chunks the heap grew from 195 MB plus 212 MB of TOAST to
-- 516 MB (existing rows rewritten; 461 MB on a fresh load), and the weighted/HNSW
-- ratio of the statement timed stage by stage against the bare HNSW query fell
-- from 2.01 to 1.94. Larger embeddings (1536-d is 6 kB) still toast the text.
--
-- The setting applies to rows written from now on; VACUUM FULL rewrites the
-- existing ones (it locks chunks and rebuilds its indexes: 63 s at 100,000
-- chunks, most of it the HNSW index), so it runs outside a transaction.

-- +goose NO TRANSACTION
-- +goose Up
ALTER TABLE chunks SET (toast_tuple_target = 8160);
VACUUM FULL chunks;

-- +goose Down
ALTER TABLE chunks RESET (toast_tuple_target);
VACUUM FULL chunks;
