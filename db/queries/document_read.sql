-- name: DocumentRead :one
-- One document by project and slug, with the fields a reader shows (the web
-- document view, an MCP client); no row when the caller may not see it, so a
-- hidden document and a missing one look the same.
SELECT d.project_id, d.id, d.slug, d.title, d.source_path, d.source_type, d.tags, d.owners, d.effective_date,
       d.canonical_type, d.status, d.retrieval_priority, d.tier, d.evidence_tier, d.entity_type,
       d.summary, d.updated_at
FROM documents d
WHERE d.project_id = sqlc.arg(project_id) AND d.slug = sqlc.arg(slug)
  AND canon_document_visible(d, sqlc.arg(access_all)::boolean, sqlc.arg(access_groups)::text[]);

-- name: DocumentBody :many
-- A document's chunks in reading order, the summary chunk first.
SELECT c.id, c.ordinal, c.heading_path, c.text, c.is_summary
FROM chunks c
WHERE c.project_id = sqlc.arg(project_id) AND c.document_id = sqlc.arg(document_id)
ORDER BY c.ordinal, c.id;
