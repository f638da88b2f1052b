-- name: TextLanguages :many
-- The languages PostgreSQL has a text-search configuration for (migration
-- 00046): detection at ingest chooses among them.
SELECT language FROM text_languages ORDER BY language;

-- name: ProjectLanguages :many
-- The languages a question to these projects is analysed in (SearchRank's
-- query_configs): detection chooses among them, and is skipped for one.
SELECT l.language::text AS language
FROM canon_project_languages(sqlc.arg(project_ids)::bigint[], sqlc.arg(default_language)::text) AS l
ORDER BY l.language;
