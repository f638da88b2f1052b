-- Graph reads: the graph step of a search (expansion and rejected-approach
-- injection) and `canon graph show`.
--
-- Tables read: kb_nodes (one per canonical document), kb_edges (from_node_id,
-- to_node_id, edge_type, weight, provenance, declared_by), documents, chunks.

-- name: GraphSearch :many
-- The graph step, run after SearchRank as a second statement: its seeds come from
-- the primary page, which exists only once SearchRank has fused, capped and cut it,
-- so folding this into SearchRank would mean re-deriving the page inside that
-- statement (and editing the ranking pipeline for something that does not rank).
-- Rejected approaches near the question come from their own partial HNSW index,
-- so the step reads a handful of documents whatever the project holds (timings:
-- bench/results/graph_step.md).
--
-- Relevance: the caller sends it only when both features are not off and some
-- primary hit carries the evidence the refusal gate counts (a raw cosine or a
-- keyword coverage reaching its thresholds), so an off-topic question, whose page
-- is whatever was least far, gets no neighbours and no rejected approaches.
-- relevant_document_ids are the documents of those hits; only they are seeds.
--
-- Output: the expanded section (origin graph_expansion) then the rejected section
-- (origin rejected_approach), each in its order (position). A document appears
-- in one section at most: primary hits are never expanded, and a rejected
-- approach goes to the rejected section, not the expanded one.
WITH
-- Seeds: the canonical documents among the relevant primary hits, ranked by their
-- first hit (primary_document_ids is the page in order, one entry per hit). A hit
-- the question has no evidence for is a guess, and its neighbours two guesses
-- away. Hub nodes (hub_types: a project index links to every headline document)
-- are not seeds either: a neighbour of the index is not a neighbour of the question.
seeds AS (
    SELECT DISTINCT ON (n.id) n.id AS node_id, n.project_id, d.id AS document_id, d.slug, d.canonical_type,
           s.seed_rank
    FROM unnest(sqlc.arg(primary_document_ids)::bigint[]) WITH ORDINALITY AS s (document_id, seed_rank)
    JOIN documents d ON d.id = s.document_id
    JOIN kb_nodes n ON n.project_id = d.project_id AND n.document_id = d.id
    WHERE d.project_id = ANY (sqlc.arg(project_ids)::bigint[])
      AND d.id = ANY (sqlc.arg(relevant_document_ids)::bigint[])
      AND n.node_type <> ALL (sqlc.arg(hub_types)::text[])
    ORDER BY n.id, s.seed_rank
),
-- Exactly one hop from the seeds, in both directions (a superseded seed reaches
-- the decision that superseded it), every edge type; direction is the seed's
-- view. The seeds drive nested loops over the unique (project_id, from_node_id,
-- ...) index and kb_edges_to, so the cost follows the seeds' degree, not the graph.
links AS (
    SELECT l.*, n.document_id, n.node_type
    FROM (
        SELECT s.seed_rank, s.slug AS seed_slug, s.canonical_type AS seed_type, e.edge_type,
               e.weight::float8 AS weight, 'outgoing'::text AS direction, e.to_node_id AS node_id
        FROM seeds s
        JOIN kb_edges e ON e.project_id = s.project_id AND e.from_node_id = s.node_id
        UNION ALL
        SELECT s.seed_rank, s.slug, s.canonical_type, e.edge_type, e.weight::float8, 'incoming'::text, e.from_node_id
        FROM seeds s
        JOIN kb_edges e ON e.project_id = s.project_id AND e.to_node_id = s.node_id
    ) AS l
    JOIN kb_nodes n ON n.project_id = ANY (sqlc.arg(project_ids)::bigint[]) AND n.id = l.node_id
),
-- Expansion follows the allowed edge types only, and never enters a hub node.
hops AS (
    SELECT l.* FROM links l
    WHERE sqlc.arg(expansion_enabled)::boolean AND l.edge_type = ANY (sqlc.arg(edge_types)::text[])
      AND l.node_type <> ALL (sqlc.arg(hub_types)::text[])
),
-- Rejected approaches nearest the question, from their own HNSW index (the
-- partial index over each one's representative chunk, migration 00032): the best
-- rejected_max_docs the request may see, in one ordered index scan that probes
-- each chunk's document for the filters (an iterative scan goes on past what
-- they reject). The probe is a LATERAL with LIMIT, which the planner cannot turn
-- into a join driven from documents: a generic plan guesses the filters keep a
-- handful of documents and, as a join, read every document first (2 s).
rejected_nearest AS MATERIALIZED (
    SELECT c.document_id
    FROM chunks c
    CROSS JOIN LATERAL (
        SELECT FROM documents d
        WHERE d.project_id = c.project_id AND d.id = c.document_id
          AND canon_document_matches(d, tags => sqlc.arg(tags)::text[],
              source_types => sqlc.arg(source_types)::text[], canonical_types => sqlc.arg(canonical_types)::text[],
              statuses => sqlc.arg(statuses)::text[], evidence_tiers => sqlc.arg(evidence_tiers)::text[],
              date_from => sqlc.narg(date_from)::date, date_to => sqlc.narg(date_to)::date,
              include_superseded => sqlc.arg(include_superseded)::boolean,
              doc_ids_filter => sqlc.arg(doc_ids_filter)::boolean, doc_ids => sqlc.arg(doc_ids)::text[],
              access_all => sqlc.arg(access_all)::boolean, access_groups => sqlc.arg(access_groups)::text[])
          AND (sqlc.arg(include_archived)::boolean OR d.status IS DISTINCT FROM 'archived')
        LIMIT 1
    ) AS visible_document
    WHERE sqlc.arg(rejected_enabled)::boolean AND c.represents_rejected
      AND c.project_id = ANY (sqlc.arg(project_ids)::bigint[])
      -- Prunes other projects' partitions on the generic plan (migration 00063).
      AND c.project_id = ANY (canon_project_slots(sqlc.arg(project_ids)::bigint[]))
    ORDER BY c.embedding <=> sqlc.arg(query_embedding)::vector
    LIMIT sqlc.arg(rejected_max_docs)::integer
),
-- Everything the step may return, read from documents once by primary key: the
-- neighbours, and the rejected approaches that are nearest, linked to a seed or
-- on the page. It passes the request's filters (canon_document_matches, as
-- SearchRank's legs) and, unless asked for, is not archived.
visible AS (
    SELECT d.id AS document_id, d.project_id, d.slug,
           sqlc.arg(rejected_enabled)::boolean AND d.canonical_type = 'rejected-approach' AS rejected
    FROM documents d
    WHERE d.project_id = ANY (sqlc.arg(project_ids)::bigint[])
      AND d.id = ANY (ARRAY(SELECT h.document_id FROM hops h
                            UNION ALL
                            SELECT l.document_id FROM links l WHERE sqlc.arg(rejected_enabled)::boolean AND l.seed_type = 'decision'
                            UNION ALL
                            SELECT r.document_id FROM rejected_nearest r)
                      || CASE WHEN sqlc.arg(rejected_enabled)::boolean
                              THEN sqlc.arg(relevant_document_ids)::bigint[] END)
      AND canon_document_matches(d, tags => sqlc.arg(tags)::text[],
          source_types => sqlc.arg(source_types)::text[], canonical_types => sqlc.arg(canonical_types)::text[],
          statuses => sqlc.arg(statuses)::text[], evidence_tiers => sqlc.arg(evidence_tiers)::text[],
          date_from => sqlc.narg(date_from)::date, date_to => sqlc.narg(date_to)::date,
          include_superseded => sqlc.arg(include_superseded)::boolean,
          doc_ids_filter => sqlc.arg(doc_ids_filter)::boolean, doc_ids => sqlc.arg(doc_ids)::text[],
          access_all => sqlc.arg(access_all)::boolean, access_groups => sqlc.arg(access_groups)::text[])
      AND (sqlc.arg(include_archived)::boolean OR d.status IS DISTINCT FROM 'archived')
),
-- The chunk that stands for a document: its summary chunk, else its first chunk
-- (ingest puts a canonical document's summary chunk at ordinal 0), with its
-- cosine to the question (0, not NaN, for a zero query vector). A handful of
-- documents, one index probe each.
representative AS (
    SELECT v.document_id, v.project_id, v.slug, v.rejected, c.id AS chunk_id,
           coalesce(1 - nullif(c.embedding <=> sqlc.arg(query_embedding)::vector, 'NaN'::float8), 0)::float8
               AS similarity
    FROM visible v
    JOIN chunks c ON c.project_id = v.project_id AND c.document_id = v.document_id AND c.ordinal = 0
),
-- Rejected approaches close to the question: the nearest, at or above the
-- calibrated cosine threshold.
rejected_similar AS (
    SELECT r.document_id
    FROM representative r
    WHERE r.rejected AND r.similarity >= sqlc.arg(rejected_min_similarity)::float8
      AND r.document_id IN (SELECT n.document_id FROM rejected_nearest n)
),
-- Rejected approaches linked, by an edge of any type in either direction, to a
-- relevant decision on the primary page: always injected, whatever their cosine.
rejected_linked AS (
    SELECT l.document_id, l.seed_rank, l.seed_slug, l.edge_type, l.weight, l.direction
    FROM links l
    JOIN representative r ON r.document_id = l.document_id
    WHERE l.seed_type = 'decision' AND r.rejected
),
-- Rejected approaches that are themselves relevant primary hits: the question is
-- about them, whatever their summary's cosine.
rejected_on_page AS (
    SELECT r.document_id
    FROM representative r
    WHERE r.rejected AND r.document_id = ANY (sqlc.arg(relevant_document_ids)::bigint[])
),
-- One row per rejected document; a linked one reports its strongest link to the page.
rejected AS (
    SELECT DISTINCT ON (x.document_id) x.document_id, x.seed_rank, x.seed_slug, x.edge_type, x.weight, x.direction
    FROM (
        SELECT document_id, NULL::bigint AS seed_rank, NULL::text AS seed_slug, NULL::text AS edge_type,
               NULL::float8 AS weight, NULL::text AS direction
        FROM rejected_similar
        UNION ALL
        SELECT document_id, NULL, NULL, NULL, NULL, NULL FROM rejected_on_page
        UNION ALL
        SELECT document_id, seed_rank, seed_slug, edge_type, weight, direction FROM rejected_linked
    ) AS x
    ORDER BY x.document_id, x.weight DESC NULLS LAST, x.seed_rank, x.edge_type
),
-- One row per seed and neighbour: the strongest edge between them (weight, then
-- outgoing before incoming), skipping primary documents (primary_document_ids is
-- the whole page) and rejected approaches already injected.
seed_neighbours AS (
    SELECT DISTINCT ON (h.seed_rank, r.document_id) r.document_id, r.slug, h.seed_rank, h.seed_slug,
           h.edge_type, h.weight, h.direction
    FROM hops h
    JOIN representative r ON r.document_id = h.document_id
    WHERE r.document_id <> ALL (sqlc.arg(primary_document_ids)::bigint[])
      AND r.document_id NOT IN (SELECT document_id FROM rejected)
    ORDER BY h.seed_rank, r.document_id, h.weight DESC, h.direction DESC, h.edge_type
),
-- Each seed brings at most max_per_seed neighbours, its strongest edges first, so
-- one well-connected seed cannot fill the section on its own.
seed_capped AS (
    SELECT x.*
    FROM (
        SELECT sn.*, row_number() OVER (PARTITION BY sn.seed_rank
                                        ORDER BY sn.weight DESC, sn.direction DESC, sn.edge_type, sn.slug) AS k
        FROM seed_neighbours sn
    ) AS x
    WHERE x.k <= sqlc.arg(max_per_seed)::integer
),
-- One row per neighbour: its strongest edge to the page (weight, then the seed's
-- rank, then outgoing before incoming).
expanded AS (
    SELECT DISTINCT ON (x.document_id) x.document_id, x.seed_rank, x.seed_slug, x.edge_type, x.weight, x.direction
    FROM seed_capped x
    ORDER BY x.document_id, x.weight DESC, x.seed_rank, x.direction DESC, x.edge_type
),
-- Expanded: edge weight descending, then the seed's rank, capped at max_nodes.
expanded_page AS (
    SELECT x.*, r.chunk_id, r.similarity, row_number() OVER (ORDER BY x.weight DESC, x.seed_rank, r.slug) AS position
    FROM expanded x
    JOIN representative r USING (document_id)
    ORDER BY x.weight DESC, x.seed_rank, r.slug
    LIMIT sqlc.arg(max_nodes)::integer
),
-- Rejected: cosine descending.
rejected_page AS (
    SELECT x.*, r.chunk_id, r.similarity, row_number() OVER (ORDER BY r.similarity DESC, r.slug) AS position
    FROM rejected x
    JOIN representative r USING (document_id)
),
sections AS (
    SELECT 'graph_expansion'::text AS origin, 1 AS section, document_id, chunk_id, similarity, position, seed_slug,
           edge_type, weight, direction
    FROM expanded_page
    UNION ALL
    SELECT 'rejected_approach'::text, 2, document_id, chunk_id, similarity, position, seed_slug, edge_type, weight, direction
    FROM rejected_page
)
SELECT x.origin, x.position::integer AS position,
       c.id AS chunk_id, d.slug, d.title, d.source_path, p.project_key, c.heading_path, c.text,
       c.links, lt.titles::text[] AS link_titles, ow.names::text[] AS owner_names,
       d.canonical_type, d.status, d.tags, d.evidence_tier, d.tier, c.is_summary,
       d.source_type, d.attended,
       coalesce(x.edge_type, '')::text AS edge_type, coalesce(x.weight, 0)::float8 AS edge_weight,
       coalesce(x.direction, '')::text AS edge_direction, coalesce(x.seed_slug, '')::text AS edge_from_slug,
       x.similarity
FROM sections x
JOIN documents d ON d.project_id = ANY (sqlc.arg(project_ids)::bigint[]) AND d.id = x.document_id
JOIN chunks c ON c.project_id = d.project_id AND c.id = x.chunk_id
JOIN projects p ON p.id = d.project_id
CROSS JOIN LATERAL canon_link_titles(c.project_id, c.links, sqlc.arg(access_all)::boolean,
                                     sqlc.arg(access_groups)::text[]) AS lt (titles)
CROSS JOIN LATERAL canon_owner_names(d.project_id, d.owners, sqlc.arg(access_all)::boolean,
                                     sqlc.arg(access_groups)::text[]) AS ow (names)
ORDER BY x.section, x.position;

-- name: GraphDocument :one
-- The document `canon graph show` starts from, with its node (NULL unless
-- canonical); no row when the caller may not see it.
SELECT d.id, d.slug, d.title, d.canonical_type, d.status, d.declared_status, d.superseded_by, d.retrieval_priority,
       n.id AS node_id
FROM documents d
LEFT JOIN kb_nodes n ON n.project_id = d.project_id AND n.document_id = d.id
WHERE d.project_id = sqlc.arg(project_id) AND d.slug = sqlc.arg(slug)
  AND canon_document_visible(d, sqlc.arg(access_all)::boolean, sqlc.arg(access_groups)::text[]);

-- name: GraphNeighbours :many
-- One hop around a node, both directions, every edge type: strongest first. A
-- neighbour the caller may not see is left out, and so is the name of a hidden
-- document that declared an edge.
SELECT 'outgoing'::text AS direction, e.edge_type, e.weight::float8 AS weight, e.provenance,
       coalesce(db.slug, '')::text AS declared_by, d.slug, d.title, d.canonical_type, d.status
FROM kb_edges e
JOIN kb_nodes n ON n.project_id = e.project_id AND n.id = e.to_node_id
JOIN documents d ON d.project_id = n.project_id AND d.id = n.document_id
LEFT JOIN documents db ON db.project_id = e.project_id AND db.id = e.declared_by
    AND canon_document_visible(db, sqlc.arg(access_all)::boolean, sqlc.arg(access_groups)::text[])
WHERE e.project_id = sqlc.arg(project_id) AND e.from_node_id = sqlc.arg(node_id)
  AND canon_document_visible(d, sqlc.arg(access_all)::boolean, sqlc.arg(access_groups)::text[])
UNION ALL
SELECT 'incoming'::text, e.edge_type, e.weight::float8, e.provenance,
       coalesce(db.slug, '')::text, d.slug, d.title, d.canonical_type, d.status
FROM kb_edges e
JOIN kb_nodes n ON n.project_id = e.project_id AND n.id = e.from_node_id
JOIN documents d ON d.project_id = n.project_id AND d.id = n.document_id
LEFT JOIN documents db ON db.project_id = e.project_id AND db.id = e.declared_by
    AND canon_document_visible(db, sqlc.arg(access_all)::boolean, sqlc.arg(access_groups)::text[])
WHERE e.project_id = sqlc.arg(project_id) AND e.to_node_id = sqlc.arg(node_id)
  AND canon_document_visible(d, sqlc.arg(access_all)::boolean, sqlc.arg(access_groups)::text[])
ORDER BY weight DESC, direction DESC, slug, edge_type;
