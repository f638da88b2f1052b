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

// ErrBulkLoadRunning is SetVectorType refusing to run beside a bulk load.
var ErrBulkLoadRunning = errors.New("a bulk ingest is running (it holds the 'canon.bulk' lock): convert the embeddings when it has ended")

// SetVectorType stores chunks.embedding as target ("vector" or "halfvec"),
// rewriting the column and building the indexes over it again with the
// policy's build memory and workers (migration 00040). It reports whether
// anything changed, and how long it took. It holds the bulk lock, so no bulk
// load defers an index meanwhile.
func SetVectorType(ctx context.Context, pool *pgxpool.Pool, target string, policy BulkPolicy) (bool, time.Duration, error) {
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
		changed, err = q.ChunkEmbeddingSetType(ctx, target)
		return err
	})
	if errors.Is(err, ErrBulkLoadRunning) {
		return false, 0, err
	}
	if err != nil {
		return false, 0, fmt.Errorf("store embeddings as %s: %w", target, err)
	}
	return changed, time.Since(start), nil
}
