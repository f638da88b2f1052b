-- The indexes a bulk load builds after its rows are in (ingest/bulk.go).
-- CREATE TABLE deferred_indexes (name text PRIMARY KEY, definition text, deferred_at timestamptz);

-- name: ChunkCountAll :one
-- Chunks of every project: a bulk load must be large next to what the shared
-- indexes already hold.
SELECT coalesce(sum(chunk_count), 0)::bigint AS chunks FROM project_stats;

-- name: ChunkCountOf :one
-- Chunks of one project: in the partitioned layout a bulk load must be large
-- next to its own partition only.
SELECT coalesce(sum(chunk_count), 0)::bigint AS chunks FROM project_stats WHERE project_id = sqlc.arg(project_id);

-- name: TableLayout :one
-- single, or partitioned by project (migration 00061).
SELECT canon_table_layout()::text AS layout;

-- name: PartitionIndexName :one
-- The name an index recorded in partition_indexes has on one project's
-- partition (chunks_embedding_hnsw: chunks_p<id>_embedding_hnsw).
SELECT canon_partition_index_name(p.table_name, p.name, sqlc.arg(project_id)::bigint)::text AS name
FROM partition_indexes p WHERE p.name = sqlc.arg(name)::text;

-- name: BulkTryLock :one
-- Held by a bulk load for its whole run, by a transaction of its own left open
-- until the load ends (its work runs in other transactions). A transaction-level
-- lock, so a pooler in transaction mode (PgBouncer) keeps it on one server
-- connection and cannot hand it to another client; it ends with the transaction,
-- and with the connection, so a dead load never keeps it.
SELECT pg_try_advisory_xact_lock(hashtextextended('canon.bulk', 0)) AS locked;

-- name: IndexDefinition :one
-- The statement that creates the index as it stands (name, method, opclass,
-- parameters); empty when there is no such index.
SELECT coalesce(pg_get_indexdef(to_regclass(sqlc.arg(name)::text)), '')::text AS definition;

-- name: IndexDeferRecord :exec
INSERT INTO deferred_indexes (name, definition) VALUES (sqlc.arg(name), sqlc.arg(definition))
ON CONFLICT (name) DO NOTHING;

-- name: IndexDeferredList :many
-- Ordered, so two restorers take the same path.
SELECT name, definition, (to_regclass(name) IS NOT NULL)::boolean AS present FROM deferred_indexes ORDER BY name;

-- name: IndexDeferredDone :exec
DELETE FROM deferred_indexes WHERE name = sqlc.arg(name);

-- name: IndexBuildSettings :exec
-- Memory and parallel workers of the index builds of this transaction only.
SELECT set_config('maintenance_work_mem', sqlc.arg(memory)::text, true),
       set_config('max_parallel_maintenance_workers', sqlc.arg(workers)::text, true);

-- name: ChunkEmbeddingSetType :one
-- Stores chunks.embedding as vector or halfvec, rebuilding the indexes over it
-- (migration 00040); false when it is stored so already.
SELECT chunks_embedding_set_type(sqlc.arg(target)::text)::boolean AS changed;

-- name: TableLayoutSet :one
-- Lays chunks, postings and lexeme_stats out as single tables or partitioned
-- by project (migration 00061); false when they are so already.
SELECT canon_set_table_layout(sqlc.arg(target)::text)::boolean AS changed;

-- name: AnalyzeStale :one
-- Analyses the project's tables never analysed and, when include_behind, those
-- autovacuum would refresh on its next round (migrations 00065, 00068), before
-- an ingest reads its rows back.
SELECT canon_analyze_stale(sqlc.arg(project_id)::bigint, sqlc.arg(include_behind)::boolean)::text[] AS analyzed;

-- name: StatsFlushAtCommit :exec
-- In a transaction that writes a project's rows: its row counts reach the
-- statistics views when it commits, not up to a second later, so
-- canon_analyze_stale sees them.
SELECT pg_stat_force_next_flush();
