-- name: DocumentRead :one
-- One document by project and slug, with the fields a reader shows (the web
-- document view, an MCP client); no row when the caller may not see it, so a
-- hidden document and a missing one look the same. link_titles: see DocumentBody.
SELECT d.project_id, d.id, d.slug, d.title, d.source_path, d.source_type, d.tags, d.owners, d.effective_date,
       d.canonical_type, d.status, d.retrieval_priority, d.tier, d.evidence_tier, d.entity_type,
       d.summary, d.summary_links, lt.titles::text[] AS summary_link_titles, d.updated_at
FROM documents d
CROSS JOIN LATERAL canon_link_titles(d.project_id, d.summary_links, sqlc.arg(access_all)::boolean,
                                     sqlc.arg(access_groups)::text[]) AS lt (titles)
WHERE d.project_id = sqlc.arg(project_id) AND d.slug = sqlc.arg(slug)
  AND canon_document_visible(d, sqlc.arg(access_all)::boolean, sqlc.arg(access_groups)::text[]);

-- name: DocumentBody :many
-- A document's chunks in reading order, the summary chunk first, with the titles
-- of the documents their wikilinks name that the caller may see (read in place
-- of the slugs).
SELECT c.id, c.ordinal, c.heading_path, c.text, c.is_summary, c.links, lt.titles::text[] AS link_titles
FROM chunks c
CROSS JOIN LATERAL canon_link_titles(c.project_id, c.links, sqlc.arg(access_all)::boolean,
                                     sqlc.arg(access_groups)::text[]) AS lt (titles)
WHERE c.project_id = sqlc.arg(project_id) AND c.document_id = sqlc.arg(document_id)
ORDER BY c.ordinal, c.id;

-- name: DocumentSummariesOf :many
-- The summary chunk of each document the given chunks belong to, for an answer's
-- context: the document's own one-line account of itself, which a question about
-- the document ("what happened in the ledger lag incident?") needs and its other
-- chunks may not repeat. Only canonical documents have one (their chunk 0), and
-- only a summary of their own (written, or their first paragraph), not their
-- title standing in for none; only documents the caller may see. chunk_id is the
-- given chunk.
SELECT hit.id AS chunk_id, s.id AS summary_chunk_id, s.heading_path, s.text, s.links, lt.titles::text[] AS link_titles
FROM chunks hit
JOIN documents d ON d.project_id = hit.project_id AND d.id = hit.document_id
JOIN chunks s ON s.project_id = d.project_id AND s.document_id = d.id AND s.ordinal = 0
CROSS JOIN LATERAL canon_link_titles(s.project_id, s.links, sqlc.arg(access_all)::boolean,
                                     sqlc.arg(access_groups)::text[]) AS lt (titles)
WHERE hit.project_id = ANY (sqlc.arg(project_ids)::bigint[])
  AND hit.id = ANY (sqlc.arg(chunk_ids)::bigint[])
  AND s.is_summary AND d.summary <> ''
  AND canon_document_visible(d, sqlc.arg(access_all)::boolean, sqlc.arg(access_groups)::text[]);

-- name: DocumentChunksOf :many
-- Every chunk but the summary of each document the given chunks belong to, in
-- reading order, for what a how-question's context lacks (search.WithSteps);
-- only documents the caller may see. chunk_id is the given chunk.
SELECT hit.id AS chunk_id, c.id AS document_chunk_id, c.heading_path, c.text, c.links, lt.titles::text[] AS link_titles
FROM chunks hit
JOIN documents d ON d.project_id = hit.project_id AND d.id = hit.document_id
JOIN chunks c ON c.project_id = d.project_id AND c.document_id = d.id AND NOT c.is_summary
CROSS JOIN LATERAL canon_link_titles(c.project_id, c.links, sqlc.arg(access_all)::boolean,
                                     sqlc.arg(access_groups)::text[]) AS lt (titles)
WHERE hit.project_id = ANY (sqlc.arg(project_ids)::bigint[])
  AND hit.id = ANY (sqlc.arg(chunk_ids)::bigint[])
  AND canon_document_visible(d, sqlc.arg(access_all)::boolean, sqlc.arg(access_groups)::text[])
ORDER BY hit.id, c.ordinal, c.id;
