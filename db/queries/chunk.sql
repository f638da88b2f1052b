-- name: ChunkDeleteByDocument :exec
-- Postings and BM25 statistics follow through cascades and triggers.
DELETE FROM chunks WHERE project_id = sqlc.arg(project_id) AND document_id = sqlc.arg(document_id);

-- name: ChunkReserveIDs :many
-- Ids for the next n chunks, taken before batches are stored side by side: chunk
-- ids (the ranking's tie-break) then follow the order of the files, not which
-- transaction reached the sequence first.
SELECT nextval(pg_get_serial_sequence('chunks', 'id'))::bigint AS id
FROM generate_series(1, sqlc.arg(n)::integer);

-- name: ChunkInsertCopy :copyfrom
-- tsv, heading_lexemes, length and the postings are derived by triggers. COPY
-- writes the given id into the identity column (ChunkReserveIDs reserved it).
INSERT INTO chunks (id, project_id, document_id, ordinal, heading_path, text, token_count, is_summary, embedding, links)
VALUES (@id, @project_id, @document_id, @ordinal, @heading_path, @text, @token_count, @is_summary, @embedding, @links);
