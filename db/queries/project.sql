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
SELECT id, project_key, created_at FROM projects WHERE project_key = sqlc.arg(project_key);

-- name: ProjectIDsByKeys :many
SELECT id, project_key FROM projects WHERE project_key = ANY (sqlc.arg(project_keys)::text[]) ORDER BY id;

-- name: ProjectList :many
SELECT p.project_key,
       (SELECT count(*) FROM documents d WHERE d.project_id = p.id)::bigint AS documents,
       coalesce(s.chunk_count, 0)::bigint AS chunks,
       (SELECT count(*) FROM documents d WHERE d.project_id = p.id AND d.canonical_type IS NOT NULL)::bigint
           AS canonical_documents,
       (SELECT count(*) FROM entities e WHERE e.project_id = p.id)::bigint AS entities
FROM projects p
LEFT JOIN project_stats s ON s.project_id = p.id
ORDER BY p.project_key;
