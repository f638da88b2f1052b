-- name: ReembedNextDocuments :many
-- canon reembed works through a project in batches of documents, one
-- transaction each; documents.embedder says which are done, so a stopped run
-- resumes. These are the next documents after a cursor (id order) whose vectors
-- another embedder made, with their number of chunks (a batch is bounded in chunks).
SELECT d.id, d.title, d.content_hash, d.embedder,
       (SELECT count(*) FROM chunks c WHERE c.project_id = d.project_id AND c.document_id = d.id)::integer AS chunks
FROM documents d
WHERE d.project_id = sqlc.arg(project_id)
  AND d.embedder <> sqlc.arg(embedder)
  AND d.id > sqlc.arg(after_id)
ORDER BY d.id
LIMIT sqlc.arg(max_documents);

-- name: ReembedChunks :many
-- What ingest embedded for each chunk: the document title, the heading path and the text.
SELECT c.id, c.document_id, c.heading_path, c.text
FROM chunks c
WHERE c.project_id = sqlc.arg(project_id) AND c.document_id = ANY (sqlc.arg(document_ids)::bigint[])
ORDER BY c.document_id, c.ordinal;

-- name: ReembedEntities :many
-- What ingest embedded for each entity page: its name, aliases, role, facts and summary.
SELECT e.id, e.document_id, e.name, e.aliases, e.role, e.facts, d.summary
FROM entities e
JOIN documents d ON d.project_id = e.project_id AND d.id = e.document_id
WHERE e.project_id = sqlc.arg(project_id) AND e.document_id = ANY (sqlc.arg(document_ids)::bigint[])
ORDER BY e.document_id;

-- name: ReembedLockDocuments :many
-- Inside a batch's transaction: the documents still as they were read, locked
-- to the commit. One an ingest replaced meanwhile made its vectors there and
-- is left out.
SELECT d.id
FROM documents d
JOIN (
    SELECT unnest(sqlc.arg(ids)::bigint[]) AS id, unnest(sqlc.arg(content_hashes)::text[]) AS content_hash,
           unnest(sqlc.arg(embedders)::text[]) AS embedder
) AS r ON r.id = d.id AND r.content_hash = d.content_hash AND r.embedder = d.embedder
WHERE d.project_id = sqlc.arg(project_id)
ORDER BY d.id
FOR UPDATE OF d;

-- name: ChunkEmbeddingsSet :exec
UPDATE chunks AS c SET embedding = r.embedding
FROM (
    SELECT unnest(sqlc.arg(ids)::bigint[]) AS id, unnest(sqlc.arg(embeddings)::vector[]) AS embedding
) AS r
WHERE c.project_id = sqlc.arg(project_id) AND c.id = r.id;

-- name: EntityEmbeddingsSet :exec
UPDATE entities AS e SET embedding = r.embedding
FROM (
    SELECT unnest(sqlc.arg(ids)::bigint[]) AS id, unnest(sqlc.arg(embeddings)::vector[]) AS embedding
) AS r
WHERE e.project_id = sqlc.arg(project_id) AND e.id = r.id;

-- name: DocumentEmbedderSet :exec
UPDATE documents SET embedder = sqlc.arg(embedder)
WHERE project_id = sqlc.arg(project_id) AND id = ANY (sqlc.arg(ids)::bigint[]);

-- name: ReembedRemaining :one
-- Documents whose vectors another embedder made.
SELECT count(*)::bigint FROM documents WHERE project_id = sqlc.arg(project_id) AND embedder <> sqlc.arg(embedder);
