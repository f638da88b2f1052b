-- name: TextLanguages :many
-- The languages PostgreSQL has a text-search configuration for (migration
-- 00046): detection at ingest chooses among them.
SELECT language FROM text_languages ORDER BY language;
