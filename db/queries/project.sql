-- name: ProjectEnsure :many
-- Returns the project's id, creating the project on first use. An existing project
-- is only read (no row version is written); when a concurrent run creates it first,
-- this returns no row and the caller asks again.
WITH found AS (
    SELECT p.id FROM projects p WHERE p.project_key = sqlc.arg(project_key)::text
),
created AS (
    INSERT INTO projects (project_key)
    SELECT sqlc.arg(project_key)::text WHERE NOT EXISTS (SELECT 1 FROM found)
    ON CONFLICT (project_key) DO NOTHING
    RETURNING id
)
SELECT id FROM found
UNION ALL
SELECT id FROM created;

-- name: ProjectGetByKey :one
SELECT id, project_key, created_at, language FROM projects WHERE project_key = sqlc.arg(project_key);

-- name: ProjectSetLanguage :exec
-- The language of the project's documents that declare none (`canon ingest --language`).
UPDATE projects SET language = sqlc.arg(language)::text
WHERE id = sqlc.arg(id) AND language IS DISTINCT FROM sqlc.arg(language)::text;

-- name: ProjectIDsByKeys :many
SELECT id, project_key FROM projects WHERE project_key = ANY (sqlc.arg(project_keys)::text[]) ORDER BY id;

-- name: ProjectList :many
-- The projects the caller may use, each with the size of what it may see: an
-- operator reads the maintained chunk count, a caller under the document ACL
-- counts the chunks of its visible documents (hidden ones are not even counted).
SELECT p.project_key,
       (SELECT count(*) FROM documents d
        WHERE d.project_id = p.id
          AND canon_document_visible(d, sqlc.arg(access_all)::boolean, sqlc.arg(access_groups)::text[]))::bigint
           AS documents,
       CASE WHEN sqlc.arg(access_all)::boolean THEN coalesce(s.chunk_count, 0)
            ELSE (SELECT count(*) FROM chunks c JOIN documents d ON d.project_id = c.project_id AND d.id = c.document_id
                  WHERE c.project_id = p.id
                    AND canon_document_visible(d, sqlc.arg(access_all)::boolean, sqlc.arg(access_groups)::text[]))
       END::bigint AS chunks,
       (SELECT count(*) FROM documents d
        WHERE d.project_id = p.id AND d.canonical_type IS NOT NULL
          AND canon_document_visible(d, sqlc.arg(access_all)::boolean, sqlc.arg(access_groups)::text[]))::bigint
           AS canonical_documents,
       (SELECT count(*) FROM entities e JOIN documents d ON d.project_id = e.project_id AND d.id = e.document_id
        WHERE e.project_id = p.id
          AND canon_document_visible(d, sqlc.arg(access_all)::boolean, sqlc.arg(access_groups)::text[]))::bigint
           AS entities
FROM projects p
LEFT JOIN project_stats s ON s.project_id = p.id
WHERE sqlc.arg(all_projects)::boolean OR p.project_key = ANY (sqlc.arg(project_keys)::text[])
ORDER BY p.project_key;

-- name: NotifyProjectsChanged :exec
-- Tells the processes that listen (canon serve, canon mcp) that an ingest
-- changed these projects, once it has committed: they forget what they cached
-- about them (postgres.ChannelChanges).
SELECT pg_notify(sqlc.arg(channel)::text, k.project_key)
FROM unnest(sqlc.arg(project_keys)::text[]) AS k (project_key);
