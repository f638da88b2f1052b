-- name: NodeUpsert :exec
INSERT INTO kb_nodes (project_id, document_id, node_type)
VALUES (sqlc.arg(project_id), sqlc.arg(document_id), sqlc.arg(node_type))
ON CONFLICT (project_id, document_id) DO UPDATE SET node_type = excluded.node_type;

-- name: NodeDeleteByDocument :exec
DELETE FROM kb_nodes WHERE project_id = sqlc.arg(project_id) AND document_id = sqlc.arg(document_id);

-- name: LinkDeleteByDocuments :exec
DELETE FROM doc_links WHERE project_id = sqlc.arg(project_id) AND declared_by = ANY (sqlc.arg(document_ids)::bigint[]);

-- name: LinkInsert :exec
INSERT INTO doc_links (project_id, declared_by, from_slug, to_slug, edge_type, weight, provenance)
-- Set-returning functions side by side in the select list zip the arrays row by row.
SELECT sqlc.arg(project_id)::bigint, unnest(sqlc.arg(declared_by)::bigint[]),
       unnest(sqlc.arg(from_slugs)::text[]), unnest(sqlc.arg(to_slugs)::text[]),
       unnest(sqlc.arg(edge_types)::text[]), unnest(sqlc.arg(weights)::numeric[]),
       unnest(sqlc.arg(provenances)::text[])
ON CONFLICT DO NOTHING;

-- name: EdgeDeleteDeclaredBy :exec
DELETE FROM kb_edges WHERE project_id = sqlc.arg(project_id) AND declared_by = ANY (sqlc.arg(document_ids)::bigint[]);

-- name: EdgeResolve :execrows
-- Turns declared links that touch the given slugs into edges once both ends are
-- canonical documents: links declared by the documents themselves, and links other
-- documents declared to or from them before they arrived (or became canonical).
INSERT INTO kb_edges (project_id, from_node_id, to_node_id, edge_type, weight, provenance, declared_by)
SELECT l.project_id, fn.id, tn.id, l.edge_type, l.weight, l.provenance, l.declared_by
FROM doc_links l
JOIN documents fd ON fd.project_id = l.project_id AND fd.slug = l.from_slug
JOIN kb_nodes fn ON fn.project_id = l.project_id AND fn.document_id = fd.id
JOIN documents td ON td.project_id = l.project_id AND td.slug = l.to_slug
JOIN kb_nodes tn ON tn.project_id = l.project_id AND tn.document_id = td.id
WHERE l.project_id = sqlc.arg(project_id)
  AND (l.from_slug = ANY (sqlc.arg(slugs)::text[]) OR l.to_slug = ANY (sqlc.arg(slugs)::text[]))
  AND fn.id <> tn.id
ORDER BY l.declared_by, l.from_slug, l.to_slug, l.edge_type
ON CONFLICT (project_id, from_node_id, to_node_id, edge_type) DO NOTHING;

-- name: LinkUnresolved :many
-- Declared links whose other end does not exist (yet): reported after an ingest.
SELECT d.slug AS declared_by, l.from_slug, l.to_slug, l.edge_type
FROM doc_links l
JOIN documents d ON d.project_id = l.project_id AND d.id = l.declared_by
WHERE l.project_id = sqlc.arg(project_id)
  AND (NOT EXISTS (SELECT 1 FROM documents x WHERE x.project_id = l.project_id AND x.slug = l.from_slug)
       OR NOT EXISTS (SELECT 1 FROM documents x WHERE x.project_id = l.project_id AND x.slug = l.to_slug))
ORDER BY d.slug, l.to_slug;

-- name: EdgeSupersedesCycles :many
-- The supersedes edges that lie on a cycle (documents that, through a chain,
-- each supersede the others), with their ends and who made them: reported after
-- an ingest. canon canon supersede refuses to close one; files may declare one.
WITH RECURSIVE
-- supersedes: the project's supersedes edges, of any provenance.
supersedes AS (
    SELECT from_node_id, to_node_id
    FROM kb_edges
    WHERE project_id = sqlc.arg(project_id) AND edge_type = 'supersedes'
),
-- reach: (start, node) when start supersedes node through a chain. Only a node
-- that both supersedes and is superseded can be on a cycle, so only those start.
reach (start_id, node_id) AS (
    SELECT s.from_node_id, s.to_node_id
    FROM supersedes s
    WHERE EXISTS (SELECT 1 FROM supersedes i WHERE i.to_node_id = s.from_node_id)
    UNION
    SELECT r.start_id, s.to_node_id
    FROM reach r
    JOIN supersedes s ON s.from_node_id = r.node_id
)
-- An edge is on a cycle exactly when its head reaches its tail.
SELECT e.from_node_id, e.to_node_id, fd.slug AS from_slug, td.slug AS to_slug, e.provenance,
       coalesce(dd.slug, '')::text AS declared_by
FROM kb_edges e
JOIN reach r ON r.start_id = e.to_node_id AND r.node_id = e.from_node_id
JOIN kb_nodes fn ON fn.project_id = e.project_id AND fn.id = e.from_node_id
JOIN documents fd ON fd.project_id = fn.project_id AND fd.id = fn.document_id
JOIN kb_nodes tn ON tn.project_id = e.project_id AND tn.id = e.to_node_id
JOIN documents td ON td.project_id = tn.project_id AND td.id = tn.document_id
LEFT JOIN documents dd ON dd.project_id = e.project_id AND dd.id = e.declared_by
WHERE e.project_id = sqlc.arg(project_id) AND e.edge_type = 'supersedes'
ORDER BY fd.slug, td.slug;

-- name: GraphLock :exec
-- Serialises the graph-link writes of concurrent ingest transactions of a project
-- until they commit (ingest.storeBatch explains why).
SELECT pg_advisory_xact_lock(hashtextextended('canon.graph', sqlc.arg(project_id)::bigint));
