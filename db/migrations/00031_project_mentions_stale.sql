-- Body mentions of entities are rebuilt for a whole project after an ingest's
-- batches commit, in a transaction of their own. An ingest killed between the two
-- left them stale, and a re-run with no changed file did not rebuild them: each
-- batch now marks the project, the rebuild clears the mark, and any ingest of a
-- marked project rebuilds.

-- +goose Up
ALTER TABLE projects ADD COLUMN mentions_stale boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE projects DROP COLUMN mentions_stale;
