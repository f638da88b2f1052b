-- Which embedder made a document's vectors (its chunks' and its entity's), as
-- "<name>/<dimension>". Ingest skips a file only when its content, its chunking
-- and this are unchanged; `canon reembed` re-embeds the documents whose embedder
-- differs from the configured one, one committed batch at a time, so a run that
-- is stopped resumes where it was. Documents stored before this column existed
-- have '' and are re-embedded by the next ingest or reembed.

-- +goose Up
ALTER TABLE documents ADD COLUMN embedder text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE documents DROP COLUMN embedder;
