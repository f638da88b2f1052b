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
-- The supersedes edges (of any provenance) on the cycles through the given
-- documents (documents that, through a chain, each supersede the others), with
-- their ends and who made them: an ingest reports those through the documents it
-- stored, since every edge it makes has one of them at an end. canon canon
-- supersede refuses to close a cycle; files may declare one.
WITH RECURSIVE
-- seeds: the given documents' graph nodes.
seeds AS (
    SELECT n.id AS node_id
    FROM documents d
    JOIN kb_nodes n ON n.project_id = d.project_id AND n.document_id = d.id
    WHERE d.project_id = sqlc.arg(project_id) AND d.slug = ANY (sqlc.arg(slugs)::text[])
),
-- ahead: (seed, node) when the seed supersedes node through a chain (UNION keeps
-- each pair once, so a cycle ends the walk).
ahead (seed_id, node_id) AS (
    SELECT node_id, node_id FROM seeds
    UNION
    SELECT a.seed_id, e.to_node_id
    FROM ahead a
    JOIN kb_edges e ON e.project_id = sqlc.arg(project_id) AND e.from_node_id = a.node_id
    WHERE e.edge_type = 'supersedes'
),
-- cyclic: the seeds a chain leads back to.
cyclic AS (
    SELECT DISTINCT a.seed_id
    FROM ahead a
    JOIN kb_edges e ON e.project_id = sqlc.arg(project_id) AND e.from_node_id = a.node_id AND e.to_node_id = a.seed_id
    WHERE e.edge_type = 'supersedes'
),
-- behind: (seed, node) when node supersedes a cyclic seed through a chain.
behind (seed_id, node_id) AS (
    SELECT seed_id, seed_id FROM cyclic
    UNION
    SELECT b.seed_id, e.from_node_id
    FROM behind b
    JOIN kb_edges e ON e.project_id = sqlc.arg(project_id) AND e.to_node_id = b.node_id
    WHERE e.edge_type = 'supersedes'
),
-- on_cycle: an edge is on a cycle through a seed when the seed reaches its tail
-- and its head reaches the seed.
on_cycle AS (
    SELECT DISTINCT e.id
    FROM ahead a
    JOIN behind b ON b.seed_id = a.seed_id
    JOIN kb_edges e ON e.project_id = sqlc.arg(project_id) AND e.from_node_id = a.node_id AND e.to_node_id = b.node_id
    WHERE e.edge_type = 'supersedes'
)
SELECT e.from_node_id, e.to_node_id, fd.slug AS from_slug, td.slug AS to_slug, e.provenance,
       coalesce(dd.slug, '')::text AS declared_by
FROM on_cycle c
JOIN kb_edges e ON e.project_id = sqlc.arg(project_id) AND e.id = c.id
JOIN kb_nodes fn ON fn.project_id = e.project_id AND fn.id = e.from_node_id
JOIN documents fd ON fd.project_id = fn.project_id AND fd.id = fn.document_id
JOIN kb_nodes tn ON tn.project_id = e.project_id AND tn.id = e.to_node_id
JOIN documents td ON td.project_id = tn.project_id AND td.id = tn.document_id
LEFT JOIN documents dd ON dd.project_id = e.project_id AND dd.id = e.declared_by
ORDER BY fd.slug, td.slug;

-- name: GraphLock :exec
-- Serialises the graph-link writes of concurrent ingest transactions of a project
-- until they commit (ingest.storeBatch explains why).
SELECT pg_advisory_xact_lock(hashtextextended('canon.graph', sqlc.arg(project_id)::bigint));

-- name: SupersessionRefresh :many
-- Records on every document of a project the documents in force that supersede
-- it (documents.superseded_by, from which the generated documents.status makes
-- an accepted or active document superseded: migration 00076). In force: a
-- canonical document, not a rejected approach, whose own file says one of
-- superseding_statuses (accepted, active, or superseded: a decision that was
-- itself replaced still retired the one before it). A draft does not retire
-- anything yet; a deprecated, archived or rejected one no longer does, and what
-- it superseded is current again.
-- Runs at the end of every transaction that writes edges, statuses or documents
-- (ingest's batches and prune, lifecycle operations, reembed), under the
-- project's graph lock, so the last of concurrent ones sees all their changes. It
-- skips a row another transaction holds (rather than wait for it while holding
-- the lock that transaction waits for): that transaction runs this refresh in
-- turn. Returns the documents it changed, with what they had before.
WITH
-- superseders: per superseded document, the slugs of the documents in force that
-- supersede it.
superseders AS (
    SELECT tn.document_id, array_agg(DISTINCT fd.slug ORDER BY fd.slug)::text[] AS slugs
    FROM kb_edges e
    JOIN kb_nodes fn ON fn.project_id = e.project_id AND fn.id = e.from_node_id
    JOIN documents fd ON fd.project_id = fn.project_id AND fd.id = fn.document_id
    JOIN kb_nodes tn ON tn.project_id = e.project_id AND tn.id = e.to_node_id
    WHERE e.project_id = sqlc.arg(project_id) AND e.edge_type = 'supersedes'
      AND fd.declared_status = ANY (sqlc.arg(superseding_statuses)::text[])
      AND fd.canonical_type IS DISTINCT FROM 'rejected-approach'
    GROUP BY tn.document_id
),
-- affected: the documents recorded as superseded now, and those that should be.
affected AS (
    SELECT d.id FROM documents d WHERE d.project_id = sqlc.arg(project_id) AND cardinality(d.superseded_by) > 0
    UNION
    SELECT s.document_id FROM superseders s
),
-- changes: those whose record differs, locked unless another transaction holds them.
changes AS (
    SELECT d.id, d.superseded_by AS before, coalesce(s.slugs, '{}')::text[] AS after
    FROM affected a
    JOIN documents d ON d.project_id = sqlc.arg(project_id) AND d.id = a.id
    LEFT JOIN superseders s ON s.document_id = a.id
    WHERE d.superseded_by IS DISTINCT FROM coalesce(s.slugs, '{}')::text[]
    FOR NO KEY UPDATE OF d SKIP LOCKED
)
UPDATE documents d SET superseded_by = c.after
FROM changes c
WHERE d.project_id = sqlc.arg(project_id) AND d.id = c.id
RETURNING d.slug, d.source_path, coalesce(d.declared_status, '')::text AS declared_status,
          coalesce(d.status, '')::text AS status, c.before::text[] AS superseded_before,
          d.superseded_by;

-- name: SupersessionDisagreements :many
-- For ingest's notice: the documents whose file says accepted or active while a
-- document in force supersedes them (so canon treats them as superseded), with
-- the superseding documents' files, among pairs with one of the given documents
-- at an end (every run that stores one of them reports the pair again).
SELECT d.slug, d.source_path, coalesce(d.declared_status, '')::text AS declared_status,
       sd.slug AS by_slug, sd.source_path AS by_source_path, coalesce(sd.declared_status, '')::text AS by_status
FROM documents d
CROSS JOIN LATERAL unnest(d.superseded_by) AS s (slug)
JOIN documents sd ON sd.project_id = d.project_id AND sd.slug = s.slug
WHERE d.project_id = sqlc.arg(project_id) AND cardinality(d.superseded_by) > 0
  AND d.status IS DISTINCT FROM d.declared_status
  AND (d.slug = ANY (sqlc.arg(slugs)::text[]) OR sd.slug = ANY (sqlc.arg(slugs)::text[]))
ORDER BY d.slug, sd.slug;
