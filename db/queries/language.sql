-- name: TextLanguages :many
-- The languages PostgreSQL has a text-search configuration for (migration
-- 00046): detection at ingest chooses among them.
SELECT language FROM text_languages ORDER BY language;

-- name: ProjectLanguages :many
-- The languages a question to these projects is analysed in, with their
-- configurations, most chunks first: the search caches them and passes them to
-- SearchRank (its query_configs); detection is skipped for one.
SELECT l.language::text AS language, l.config::text AS config
FROM canon_project_languages(sqlc.arg(project_ids)::bigint[], sqlc.arg(default_language)::text) AS l (language, config, chunks)
ORDER BY l.chunks DESC, l.language;
