package ingest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	db "github.com/canonkb/canon/gen/db"
)

// ErrBulkLoadRunning is SetVectorType or SetTableLayout refusing to run beside a bulk load.
var ErrBulkLoadRunning = errors.New("a bulk ingest is running (it holds the 'canon.bulk' lock): convert the database when it has ended")

// SetVectorType stores chunks.embedding as target ("vector" or "halfvec"),
// rewriting the column and building the indexes over it again with the
// policy's build memory and workers (migration 00040). It reports whether
// anything changed, and how long it took. It holds the bulk lock, so no bulk
// load defers an index meanwhile.
func SetVectorType(ctx context.Context, pool *pgxpool.Pool, target string, policy BulkPolicy) (bool, time.Duration, error) {
	changed, took, err := convertLocked(ctx, pool, policy, func(q *db.Queries) (bool, error) {
		return q.ChunkEmbeddingSetType(ctx, target)
	})
	if err != nil && !errors.Is(err, ErrBulkLoadRunning) {
		err = fmt.Errorf("store embeddings as %s: %w", target, err)
	}
	return changed, took, err
}

// SetTableLayout lays chunks, postings and lexeme_stats out as target
// ("single" or "partitioned" by project): each table is copied into the new
// layout and its indexes built again, with the policy's build memory and
// workers (migration 00061). It reports whether anything changed, and how long
// it took; like SetVectorType it holds the bulk lock.
func SetTableLayout(ctx context.Context, pool *pgxpool.Pool, target string, policy BulkPolicy) (bool, time.Duration, error) {
	changed, took, err := convertLocked(ctx, pool, policy, func(q *db.Queries) (bool, error) {
		return q.TableLayoutSet(ctx, target)
	})
	if err != nil && !errors.Is(err, ErrBulkLoadRunning) {
		err = fmt.Errorf("lay the tables out %s: %w", target, err)
	}
	return changed, took, err
}

// convertLocked runs convert in one transaction holding the bulk lock, with
// the policy's index build settings.
func convertLocked(ctx context.Context, pool *pgxpool.Pool, policy BulkPolicy, convert func(*db.Queries) (bool, error)) (bool, time.Duration, error) {
	start := time.Now()
	var changed bool
	// The bulk lock is the transaction's own, taken first (a pooler in
	// transaction mode keeps it on the one server connection; see BulkTryLock).
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		q := db.New(tx)
		locked, err := q.BulkTryLock(ctx)
		if err != nil {
			return err
		}
		if !locked {
			return ErrBulkLoadRunning
		}
		memory := policy.BuildMemory
		if memory == "" {
			memory = DefaultIndexBuildMemory
		}
		if err := q.IndexBuildSettings(ctx, db.IndexBuildSettingsParams{
			Memory: memory, Workers: strconv.Itoa(policy.buildWorkers())}); err != nil {
			return err
		}
		changed, err = convert(q)
		return err
	})
	if err != nil {
		return false, 0, err
	}
	return changed, time.Since(start), nil
}
