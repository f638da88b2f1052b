-- Document access lists (frontmatter access: [group, ...]). An empty list means
-- every reader of the project sees the document; otherwise only principals that
-- hold one of the groups do. The ranking statements read it, never Go code after
-- a LIMIT.

-- +goose Up
ALTER TABLE documents ADD COLUMN access text[] NOT NULL DEFAULT '{}';

-- +goose Down
ALTER TABLE documents DROP COLUMN access;
