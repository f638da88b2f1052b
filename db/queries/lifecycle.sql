-- Lifecycle operations (package lifecycle): each runs these in one transaction
-- and records itself in lifecycle_audit (project_id, document_id, slug, actor,
-- at, operation, before, after).

-- name: LifecycleDocumentsLock :many
-- The documents an operation reads or changes, with their graph node (NULL unless
-- canonical), locked until the transaction ends. Locked in id order, so two
-- operations on the same pair of documents cannot deadlock. The status read and
-- written is the declared one (what the file or the last operation says), not
-- the effective status a superseding document makes (migration 00076).
SELECT d.id, d.slug, d.canonical_type, d.declared_status, d.retrieval_priority, d.entity_type, n.id AS node_id
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
SET canonical_type = sqlc.narg(canonical_type), declared_status = sqlc.narg(declared_status),
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

-- name: LifecycleSupersedesChain :many
-- The supersedes edges on the chains from one node to another (start supersedes
-- ... supersedes goal), with their ends' slugs and whether the caller may see
-- them: none when there is no such chain. Supersede asks from OLD to NEW before
-- it adds NEW -supersedes-> OLD, which would close a cycle through these edges.
WITH RECURSIVE
-- ahead: the start and every node it supersedes, directly or through others
-- (UNION keeps each node once, so a cycle the files already declare ends the walk).
ahead (node_id) AS (
    SELECT sqlc.arg(start_node_id)::bigint
    UNION
    SELECT e.to_node_id
    FROM ahead a
    JOIN kb_edges e ON e.project_id = sqlc.arg(project_id) AND e.from_node_id = a.node_id
    WHERE e.edge_type = 'supersedes'
),
-- behind: the goal and every node that supersedes it, directly or through others.
behind (node_id) AS (
    SELECT sqlc.arg(goal_node_id)::bigint
    UNION
    SELECT e.from_node_id
    FROM behind b
    JOIN kb_edges e ON e.project_id = sqlc.arg(project_id) AND e.to_node_id = b.node_id
    WHERE e.edge_type = 'supersedes'
)
-- An edge is on a chain from the start to the goal exactly when the start reaches
-- its tail and its head reaches the goal.
SELECT e.from_node_id, e.to_node_id, fd.slug AS from_slug, td.slug AS to_slug,
       canon_document_visible(fd, sqlc.arg(access_all)::boolean, sqlc.arg(access_groups)::text[]) AS from_visible,
       canon_document_visible(td, sqlc.arg(access_all)::boolean, sqlc.arg(access_groups)::text[]) AS to_visible
FROM kb_edges e
JOIN ahead a ON a.node_id = e.from_node_id
JOIN behind b ON b.node_id = e.to_node_id
JOIN kb_nodes fn ON fn.project_id = e.project_id AND fn.id = e.from_node_id
JOIN documents fd ON fd.project_id = fn.project_id AND fd.id = fn.document_id
JOIN kb_nodes tn ON tn.project_id = e.project_id AND tn.id = e.to_node_id
JOIN documents td ON td.project_id = tn.project_id AND td.id = tn.document_id
WHERE e.project_id = sqlc.arg(project_id) AND e.edge_type = 'supersedes'
ORDER BY e.from_node_id, e.to_node_id;

-- name: LifecycleRejectedFor :many
-- The documents recorded as rejected in favour of a node (decision_for edges
-- into it, any provenance), and whether the caller may see each.
SELECT d.slug, canon_document_visible(d, sqlc.arg(access_all)::boolean, sqlc.arg(access_groups)::text[]) AS visible
FROM kb_edges e
JOIN kb_nodes n ON n.project_id = e.project_id AND n.id = e.from_node_id
JOIN documents d ON d.project_id = n.project_id AND d.id = n.document_id
WHERE e.project_id = sqlc.arg(project_id) AND e.to_node_id = sqlc.arg(node_id) AND e.edge_type = 'decision_for'
ORDER BY d.slug;

-- name: LifecycleSupersededBy :many
-- The documents a node supersedes (supersedes edges from it, any provenance), and
-- whether the caller may see each.
SELECT d.slug, canon_document_visible(d, sqlc.arg(access_all)::boolean, sqlc.arg(access_groups)::text[]) AS visible
FROM kb_edges e
JOIN kb_nodes n ON n.project_id = e.project_id AND n.id = e.to_node_id
JOIN documents d ON d.project_id = n.project_id AND d.id = n.document_id
WHERE e.project_id = sqlc.arg(project_id) AND e.from_node_id = sqlc.arg(node_id) AND e.edge_type = 'supersedes'
ORDER BY d.slug;

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

-- name: LifecycleEdgesContradicted :many
-- For ingest, before it rewrites documents: the lifecycle edges about them that
-- their new frontmatter contradicts (zipped arrays: slug, type, status, each
-- empty for none), for the notice. A lifecycle edge stands while the document it
-- is about agrees with it: a supersedes edge into a document with a retired
-- status, a decision_for edge from a rejected approach.
-- LifecycleEdgeDeleteContradicted deletes them; an edge a file declares as well
-- comes back as declared, so it is not named.
WITH
-- declared: what each rewritten document's frontmatter says.
-- (Set-returning functions side by side in the select list zip the arrays row by row.)
declared AS (
    SELECT unnest(sqlc.arg(slugs)::text[]) AS slug, unnest(sqlc.arg(canonical_types)::text[]) AS canonical_type,
           unnest(sqlc.arg(statuses)::text[]) AS status
),
-- nodes: the graph nodes those documents have before the rewrite.
nodes AS (
    SELECT x.slug, x.canonical_type, x.status, n.id AS node_id
    FROM declared x
    JOIN documents d ON d.project_id = sqlc.arg(project_id) AND d.slug = x.slug
    JOIN kb_nodes n ON n.project_id = d.project_id AND n.document_id = d.id
),
-- contradicted: the edges each document's new fields no longer bear out.
contradicted AS (
    SELECT n.slug, n.canonical_type, n.status, e.from_node_id, e.to_node_id, e.edge_type
    FROM nodes n
    JOIN kb_edges e ON e.project_id = sqlc.arg(project_id) AND e.to_node_id = n.node_id
    WHERE e.edge_type = 'supersedes' AND e.provenance = 'lifecycle'
      AND NOT n.status = ANY (sqlc.arg(retired_statuses)::text[])
    UNION ALL
    SELECT n.slug, n.canonical_type, n.status, e.from_node_id, e.to_node_id, e.edge_type
    FROM nodes n
    JOIN kb_edges e ON e.project_id = sqlc.arg(project_id) AND e.from_node_id = n.node_id
    WHERE e.edge_type = 'decision_for' AND e.provenance = 'lifecycle'
      AND n.canonical_type <> 'rejected-approach'
)
SELECT c.slug::text AS slug, c.canonical_type::text AS canonical_type, c.status::text AS status, c.edge_type,
       fd.slug AS from_slug, td.slug AS to_slug
FROM contradicted c
JOIN kb_nodes fn ON fn.project_id = sqlc.arg(project_id) AND fn.id = c.from_node_id
JOIN documents fd ON fd.project_id = fn.project_id AND fd.id = fn.document_id
JOIN kb_nodes tn ON tn.project_id = sqlc.arg(project_id) AND tn.id = c.to_node_id
JOIN documents td ON td.project_id = tn.project_id AND td.id = tn.document_id
WHERE NOT EXISTS (
    SELECT 1
    FROM doc_links l
    WHERE l.project_id = sqlc.arg(project_id) AND l.from_slug = fd.slug AND l.to_slug = td.slug
      AND l.edge_type = c.edge_type
)
ORDER BY c.slug, c.edge_type, fd.slug, td.slug;

-- name: LifecycleEdgeDeleteContradicted :exec
-- For ingest, once it has rewritten the documents' rows (and before it resolves
-- their links): deletes the lifecycle edges about them that their new fields
-- contradict, as LifecycleEdgesContradicted defines them.
WITH
-- nodes: the rewritten documents' graph nodes, with their new fields.
nodes AS (
    SELECT coalesce(d.canonical_type, '') AS canonical_type, coalesce(d.declared_status, '') AS status, n.id AS node_id
    FROM documents d
    JOIN kb_nodes n ON n.project_id = d.project_id AND n.document_id = d.id
    WHERE d.project_id = sqlc.arg(project_id) AND d.id = ANY (sqlc.arg(document_ids)::bigint[])
),
-- contradicted: the edges each document's new fields no longer bear out.
contradicted AS (
    SELECT e.id
    FROM nodes n
    JOIN kb_edges e ON e.project_id = sqlc.arg(project_id) AND e.to_node_id = n.node_id
    WHERE e.edge_type = 'supersedes' AND e.provenance = 'lifecycle'
      AND NOT n.status = ANY (sqlc.arg(retired_statuses)::text[])
    UNION ALL
    SELECT e.id
    FROM nodes n
    JOIN kb_edges e ON e.project_id = sqlc.arg(project_id) AND e.from_node_id = n.node_id
    WHERE e.edge_type = 'decision_for' AND e.provenance = 'lifecycle'
      AND n.canonical_type <> 'rejected-approach'
)
DELETE FROM kb_edges e
USING contradicted c
WHERE e.project_id = sqlc.arg(project_id) AND e.id = c.id;

-- name: LifecycleOverrides :many
-- For ingest: among the given documents, those changed by a lifecycle operation
-- after the last ingest that rewrote them, with their current canonical fields
-- (the declared status, which the frontmatter is compared with) and that latest
-- operation.
SELECT DISTINCT ON (d.id) d.slug, d.canonical_type, d.declared_status, d.retrieval_priority,
       a.operation, a.actor, a.at
FROM documents d
JOIN lifecycle_audit a ON a.project_id = d.project_id AND a.document_id = d.id
WHERE d.project_id = sqlc.arg(project_id) AND d.slug = ANY (sqlc.arg(slugs)::text[])
  AND a.at > d.updated_at
ORDER BY d.id, a.at DESC, a.id DESC;

-- name: LifecycleSinceWrite :many
-- The lifecycle operations on a document since the ingest that last wrote it,
-- oldest first: what Restore undoes (the first one's before is what the file
-- says; their after.edges_added the edges they added).
SELECT a.operation, a.before::text AS before, a.after::text AS after
FROM documents d
JOIN lifecycle_audit a ON a.project_id = d.project_id AND a.document_id = d.id
WHERE d.project_id = sqlc.arg(project_id) AND d.id = sqlc.arg(document_id)
  AND a.at > d.updated_at
ORDER BY a.at, a.id;

-- name: LifecycleEdgeDrop :execrows
-- Deletes an edge a lifecycle operation added, by its ends' slugs: only one of
-- provenance lifecycle, so an edge a file declares stays.
DELETE FROM kb_edges e
USING documents fd, kb_nodes fn, documents td, kb_nodes tn
WHERE e.project_id = sqlc.arg(project_id) AND e.provenance = 'lifecycle' AND e.edge_type = sqlc.arg(edge_type)
  AND fd.project_id = e.project_id AND fd.slug = sqlc.arg(from_slug)
  AND fn.project_id = fd.project_id AND fn.document_id = fd.id AND e.from_node_id = fn.id
  AND td.project_id = e.project_id AND td.slug = sqlc.arg(to_slug)
  AND tn.project_id = td.project_id AND tn.document_id = td.id AND e.to_node_id = tn.id;
