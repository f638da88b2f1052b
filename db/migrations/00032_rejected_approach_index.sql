-- Rejected approaches close to a question are found through an index of their
-- own. The graph step used to measure the question against every rejected
-- approach of the project (a chunk lookup and a cosine each: 888 of them, most of
-- a 9 ms step at 100,000 chunks). chunks.represents_rejected marks the chunk that
-- stands for a rejected approach (its ordinal-0 chunk: the summary, else the
-- first), and a partial HNSW index holds those chunks only.

-- +goose Up
ALTER TABLE chunks ADD COLUMN represents_rejected boolean NOT NULL DEFAULT false;

-- The mark follows the document's canonical type when a chunk is written...
-- +goose StatementBegin
CREATE FUNCTION chunks_represents_rejected() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.represents_rejected := NEW.ordinal = 0 AND EXISTS (
        SELECT FROM documents d
        WHERE d.project_id = NEW.project_id AND d.id = NEW.document_id AND d.canonical_type = 'rejected-approach');
    RETURN NEW;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER chunks_represents_rejected BEFORE INSERT OR UPDATE OF ordinal, document_id ON chunks
    FOR EACH ROW EXECUTE FUNCTION chunks_represents_rejected();

-- ...and when the type changes under existing chunks (canon lifecycle).
-- +goose StatementBegin
CREATE FUNCTION documents_represents_rejected() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE chunks c SET represents_rejected = NEW.canonical_type IS NOT DISTINCT FROM 'rejected-approach'
    WHERE c.project_id = NEW.project_id AND c.document_id = NEW.id AND c.ordinal = 0;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER documents_represents_rejected AFTER UPDATE OF canonical_type ON documents
    FOR EACH ROW WHEN (OLD.canonical_type IS DISTINCT FROM NEW.canonical_type)
    EXECUTE FUNCTION documents_represents_rejected();

UPDATE chunks c SET represents_rejected = true
FROM documents d
WHERE d.project_id = c.project_id AND d.id = c.document_id AND c.ordinal = 0
  AND d.canonical_type = 'rejected-approach';

CREATE INDEX chunks_rejected_hnsw ON chunks USING hnsw (embedding vector_cosine_ops) WHERE represents_rejected;

-- +goose Down
DROP INDEX chunks_rejected_hnsw;
DROP TRIGGER documents_represents_rejected ON documents;
DROP FUNCTION documents_represents_rejected();
DROP TRIGGER chunks_represents_rejected ON chunks;
DROP FUNCTION chunks_represents_rejected();
ALTER TABLE chunks DROP COLUMN represents_rejected;
