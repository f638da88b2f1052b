-- name: DocumentRead :one
-- One document by slug, with the fields a reader (an MCP client, an agent) shows.
SELECT d.id, d.slug, d.title, d.source_path, d.source_type, d.tags, d.owners, d.effective_date,
       d.canonical_type, d.status, d.retrieval_priority, d.tier, d.evidence_tier, d.entity_type,
       d.summary, d.updated_at
FROM documents d
WHERE d.project_id = sqlc.arg(project_id) AND d.slug = sqlc.arg(slug);

-- name: DocumentBody :many
-- The document's chunks in reading order; the summary chunk is left out because
-- it repeats the summary.
SELECT c.ordinal, c.heading_path, c.text
FROM chunks c
WHERE c.project_id = sqlc.arg(project_id) AND c.document_id = sqlc.arg(document_id) AND NOT c.is_summary
ORDER BY c.ordinal;
