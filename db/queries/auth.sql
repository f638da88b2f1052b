-- API keys and the audit log (package auth). The table definitions are in
-- migration 00015: api_keys (id, name, prefix, key_hash, projects, role, groups,
-- created_at, last_used_at, revoked_at) and audit_log.

-- name: APIKeyInsert :one
INSERT INTO api_keys (name, prefix, key_hash, projects, role, groups)
VALUES (sqlc.arg(name), sqlc.arg(prefix), sqlc.arg(key_hash), sqlc.arg(projects)::text[],
        sqlc.arg(role), sqlc.arg(groups)::text[])
RETURNING id, created_at;

-- name: APIKeyByHash :one
-- Revoked keys are found too, so the caller can say the key was revoked.
SELECT id, name, prefix, projects, role, groups, revoked_at
FROM api_keys
WHERE key_hash = sqlc.arg(key_hash);

-- name: APIKeyTouch :exec
-- At most one write a minute per key, however busy it is.
UPDATE api_keys
SET last_used_at = now()
WHERE id = sqlc.arg(id)
  AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute');

-- name: APIKeyList :many
SELECT id, name, prefix, projects, role, groups, created_at, last_used_at, revoked_at
FROM api_keys
ORDER BY created_at, id;

-- name: APIKeyGet :one
SELECT id, name, prefix, projects, role, groups, created_at, last_used_at, revoked_at
FROM api_keys
WHERE id = sqlc.arg(id);

-- name: APIKeyRevoke :one
-- Revoking twice keeps the first time.
UPDATE api_keys
SET revoked_at = coalesce(revoked_at, now())
WHERE id = sqlc.arg(id)
RETURNING revoked_at;

-- name: AuditInsert :exec
INSERT INTO audit_log (key_id, actor, rpc, project, document, outcome)
VALUES (sqlc.narg(key_id), sqlc.arg(actor), sqlc.arg(rpc), sqlc.arg(project), sqlc.arg(document),
        sqlc.arg(outcome));

-- name: AuditList :many
SELECT id, key_id, actor, rpc, project, document, at, outcome
FROM audit_log
ORDER BY id DESC
LIMIT sqlc.arg(row_limit);
