-- name: ChunkDeleteByDocument :exec
-- Postings and BM25 statistics follow through cascades and triggers.
DELETE FROM chunks WHERE project_id = sqlc.arg(project_id) AND document_id = sqlc.arg(document_id);

-- name: ChunkInsertCopy :copyfrom
-- tsv, heading_lexemes, length and the postings are derived by triggers.
INSERT INTO chunks (project_id, document_id, ordinal, heading_path, text, token_count, is_summary, embedding)
VALUES (@project_id, @document_id, @ordinal, @heading_path, @text, @token_count, @is_summary, @embedding);
