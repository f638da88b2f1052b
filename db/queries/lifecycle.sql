-- Lifecycle operations (package lifecycle): each runs these in one transaction
-- and records itself in lifecycle_audit (project_id, document_id, slug, actor,
-- at, operation, before, after).

-- name: LifecycleDocumentsLock :many
-- The documents an operation reads or changes, with their graph node (NULL unless
-- canonical), locked until the transaction ends. Locked in id order, so two
-- operations on the same pair of documents cannot deadlock.
SELECT d.id, d.slug, d.canonical_type, d.status, d.retrieval_priority, n.id AS node_id
FROM documents d
LEFT JOIN kb_nodes n ON n.project_id = d.project_id AND n.document_id = d.id
WHERE d.project_id = sqlc.arg(project_id) AND d.slug = ANY (sqlc.arg(slugs)::text[])
  -- An editor cannot change what it may not see: a hidden document is not found.
  AND canon_document_visible(d, sqlc.arg(access_all)::boolean, sqlc.arg(access_groups)::text[])
ORDER BY d.id
FOR UPDATE OF d;

-- name: LifecycleDocumentUpdate :exec
-- Leaves updated_at alone: it records the last ingest that rewrote the document,
-- which LifecycleOverrides compares with the audit.
UPDATE documents
SET canonical_type = sqlc.narg(canonical_type), status = sqlc.narg(status),
    retrieval_priority = sqlc.arg(retrieval_priority)
WHERE project_id = sqlc.arg(project_id) AND id = sqlc.arg(id);

-- name: LifecycleNodeEnsure :one
INSERT INTO kb_nodes (project_id, document_id, node_type)
VALUES (sqlc.arg(project_id), sqlc.arg(document_id), sqlc.arg(node_type))
ON CONFLICT (project_id, document_id) DO UPDATE SET node_type = excluded.node_type
RETURNING id;

-- name: LifecycleEdgeEnsure :execrows
-- 1 when the edge is new, 0 when an edge with the same ends and type exists
-- (whatever its provenance): re-running an operation adds nothing.
INSERT INTO kb_edges (project_id, from_node_id, to_node_id, edge_type, weight, provenance, declared_by)
VALUES (sqlc.arg(project_id), sqlc.arg(from_node_id), sqlc.arg(to_node_id), sqlc.arg(edge_type),
        sqlc.arg(weight), 'lifecycle', NULL)
ON CONFLICT (project_id, from_node_id, to_node_id, edge_type) DO NOTHING;

-- name: LifecycleEdgeExists :one
SELECT EXISTS (
    SELECT 1 FROM kb_edges
    WHERE project_id = sqlc.arg(project_id) AND from_node_id = sqlc.arg(from_node_id)
      AND to_node_id = sqlc.arg(to_node_id) AND edge_type = sqlc.arg(edge_type)
) AS found;

-- name: LifecycleAuditInsert :one
-- before and after arrive as JSON text (see ChatLogInsert).
INSERT INTO lifecycle_audit (project_id, document_id, slug, actor, operation, before, after)
VALUES (sqlc.arg(project_id), sqlc.arg(document_id), sqlc.arg(slug), sqlc.arg(actor), sqlc.arg(operation),
        sqlc.arg(before)::text::jsonb, sqlc.arg(after)::text::jsonb)
RETURNING id, at;

-- name: LifecycleAuditByDocument :many
-- A document's lifecycle history, newest first.
SELECT id, actor, at, operation, before, after
FROM lifecycle_audit
WHERE project_id = sqlc.arg(project_id) AND slug = sqlc.arg(slug)
ORDER BY at DESC, id DESC;

-- name: LifecycleOverrides :many
-- For ingest: among the given documents, those changed by a lifecycle operation
-- after the last ingest that rewrote them, with their current canonical fields
-- and that latest operation.
SELECT DISTINCT ON (d.id) d.slug, d.canonical_type, d.status, d.retrieval_priority,
       a.operation, a.actor, a.at
FROM documents d
JOIN lifecycle_audit a ON a.project_id = d.project_id AND a.document_id = d.id
WHERE d.project_id = sqlc.arg(project_id) AND d.slug = ANY (sqlc.arg(slugs)::text[])
  AND a.at > d.updated_at
ORDER BY d.id, a.at DESC, a.id DESC;
