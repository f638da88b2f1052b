-- name: DocumentHashes :many
-- What is stored for a project, so unchanged files cost one read and no writes
-- (read before a run converts anything: a file whose bytes are unchanged is not
-- even converted). visible: whether the caller may see the document; a key never
-- replaces or prunes one it may not see.
SELECT d.id, d.slug, d.source_path, d.content_hash, d.embedder,
       canon_document_visible(d, sqlc.arg(access_all)::boolean, sqlc.arg(access_groups)::text[]) AS visible
FROM documents d
WHERE d.project_id = sqlc.arg(project_id);

-- name: DocumentUpsert :one
-- Lexemes of the summary and of the tags are computed here with the document's
-- language's configuration, as its chunks are, so the ranking query can compare
-- them to the question's.
INSERT INTO documents (
    project_id, slug, title, source_path, source_type, tags, owners, content_hash, effective_date,
    canonical_type, declared_status, retrieval_priority, tier, evidence_tier, entity_type, summary, summary_links,
    preamble_lexemes, tag_lexemes, embedder, access, language, attended
) VALUES (
    sqlc.arg(project_id), sqlc.arg(slug), sqlc.arg(title), sqlc.arg(source_path), sqlc.arg(source_type),
    sqlc.arg(tags)::text[], sqlc.arg(owners)::text[], sqlc.arg(content_hash), sqlc.narg(effective_date)::date,
    sqlc.narg(canonical_type), sqlc.narg(declared_status), sqlc.arg(retrieval_priority), sqlc.arg(tier),
    sqlc.narg(evidence_tier), sqlc.narg(entity_type), sqlc.arg(summary), sqlc.arg(summary_links)::text::jsonb,
    tsvector_to_array(to_tsvector(canon_text_config(sqlc.arg(language)::text), sqlc.arg(summary))),
    tsvector_to_array(to_tsvector(canon_text_config(sqlc.arg(language)::text),
                                  array_to_string(sqlc.arg(tags)::text[], ' '))),
    sqlc.arg(embedder), sqlc.arg(access)::text[], sqlc.arg(language)::text, sqlc.arg(attended)::boolean
)
ON CONFLICT (project_id, slug) DO UPDATE SET
    title = excluded.title,
    source_path = excluded.source_path,
    source_type = excluded.source_type,
    tags = excluded.tags,
    owners = excluded.owners,
    content_hash = excluded.content_hash,
    effective_date = excluded.effective_date,
    canonical_type = excluded.canonical_type,
    declared_status = excluded.declared_status,
    retrieval_priority = excluded.retrieval_priority,
    tier = excluded.tier,
    evidence_tier = excluded.evidence_tier,
    entity_type = excluded.entity_type,
    summary = excluded.summary,
    summary_links = excluded.summary_links,
    preamble_lexemes = excluded.preamble_lexemes,
    tag_lexemes = excluded.tag_lexemes,
    embedder = excluded.embedder,
    access = excluded.access,
    language = excluded.language,
    attended = excluded.attended,
    updated_at = now()
RETURNING id, (xmax = 0) AS inserted;

-- name: DocumentGetBySlug :one
SELECT id, slug, title, source_path, canonical_type, status, retrieval_priority, tier
FROM documents WHERE project_id = sqlc.arg(project_id) AND slug = sqlc.arg(slug);

-- name: DocumentDeleteByIDs :exec
-- Chunks, postings, nodes, edges, links and mentions go with it (cascades).
DELETE FROM documents WHERE project_id = sqlc.arg(project_id) AND id = ANY (sqlc.arg(ids)::bigint[]);

-- name: DocumentSourceTypes :many
-- The source types of the projects' documents the caller may see: a search
-- refuses a source_types filter value none of them has (nor any format), which
-- would otherwise find nothing and read as an answer.
SELECT DISTINCT d.source_type
FROM documents d
WHERE d.project_id = ANY (sqlc.arg(project_ids)::bigint[])
  AND canon_document_visible(d, sqlc.arg(access_all)::boolean, sqlc.arg(access_groups)::text[])
ORDER BY d.source_type;
