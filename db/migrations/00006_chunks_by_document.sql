-- A filtered search collects the chunk ids of the documents its filters keep
-- (search.sql, filtered_chunks). The unique (document_id, ordinal) index now also
-- carries the chunk id, so that is an index-only scan per document instead of a
-- heap fetch per chunk (or a sequential scan of every chunk, embeddings and text
-- included, when a filter keeps many documents).

-- +goose Up
ALTER TABLE chunks ADD CONSTRAINT chunks_document_ordinal UNIQUE (document_id, ordinal) INCLUDE (id);
ALTER TABLE chunks DROP CONSTRAINT chunks_document_id_ordinal_key;

-- +goose Down
ALTER TABLE chunks ADD CONSTRAINT chunks_document_id_ordinal_key UNIQUE (document_id, ordinal);
ALTER TABLE chunks DROP CONSTRAINT chunks_document_ordinal;
