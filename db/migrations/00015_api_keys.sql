-- API keys and the audit log (package auth). A key is 32 random bytes shown once;
-- the table keeps only its SHA-256 (a high-entropy secret needs no slow hash) and
-- a short prefix a person can recognise in lists and logs.
--
-- Keys are revoked, never deleted, so the audit log can always name them.

-- +goose Up
CREATE TABLE api_keys (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name         text NOT NULL CHECK (name <> ''),
    -- The key's first characters, e.g. canon_AbCd1234: enough to tell keys apart.
    prefix       text NOT NULL,
    key_hash     bytea NOT NULL UNIQUE CHECK (octet_length(key_hash) = 32),
    projects     text[] NOT NULL CHECK (cardinality(projects) > 0),
    role         text NOT NULL CHECK (role IN ('reader', 'editor', 'admin')),
    groups       text[] NOT NULL DEFAULT '{}',
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz
);

-- Who did what, when, with what outcome: ingest, lifecycle and key operations,
-- allowed or refused. key_id is NULL for the operator (the CLI, or KB_AUTH=off).
CREATE TABLE audit_log (
    id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    key_id   uuid,
    actor    text NOT NULL,
    rpc      text NOT NULL,
    project  text NOT NULL DEFAULT '',
    document text NOT NULL DEFAULT '',
    at       timestamptz NOT NULL DEFAULT now(),
    -- ok, or the Connect code that refused or failed the call.
    outcome  text NOT NULL
);

CREATE INDEX audit_log_key ON audit_log (key_id, at DESC);

-- +goose Down
DROP TABLE audit_log;
DROP TABLE api_keys;
