// Package prelude runs a statement after the session settings it needs, in one
// round trip: the settings (set_config(..., true)) last until the batch's
// implicit transaction ends, so they never leak to the pool's next user.
package prelude

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// GenericPlan is the prelude of a statement whose best plan does not depend on its
// values: planning it for each call's values costs more than running it (pass
// 1 of a two-pass search: 4 ms of planning for a 4 ms statement). JIT is off for
// the same reason it is off for the ranking statement: these statements touch a
// few thousand rows, and compiling costs more than it saves.
const GenericPlan = `SELECT set_config('plan_cache_mode', 'force_generic_plan', true),
       set_config('jit', 'off', true)`

// DB is a db.DBTX that sends a prelude statement and the query together as one
// pgx batch: one network round trip, one implicit transaction.
type DB struct {
	pool        *pgxpool.Pool
	prelude     string
	preludeArgs []any
}

// New returns a DB that runs prelude, with args, before each query on pool.
func New(pool *pgxpool.Pool, prelude string, args ...any) *DB {
	return &DB{pool: pool, prelude: prelude, preludeArgs: args}
}

// Query sends the prelude and sql as one batch; the rows hold the connection until closed.
func (b *DB) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	conn, err := b.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	batch := &pgx.Batch{}
	batch.Queue(b.prelude, b.preludeArgs...)
	batch.Queue(sql, args...)
	br := conn.SendBatch(ctx, batch)
	if _, err := br.Exec(); err != nil {
		br.Close()
		conn.Release()
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		br.Close()
		conn.Release()
		return nil, err
	}
	return &batchRows{Rows: rows, br: br, conn: conn}, nil
}

// Exec is not supported: the statements sent this way return rows.
func (b *DB) Exec(context.Context, string, ...any) (pgconn.CommandTag, error) {
	return pgconn.CommandTag{}, errors.New("prelude: Exec is not supported")
}

// QueryRow is not supported: the statements sent this way are :many queries.
func (b *DB) QueryRow(context.Context, string, ...any) pgx.Row {
	panic("prelude: QueryRow is not supported")
}

// CopyFrom is not supported.
func (b *DB) CopyFrom(context.Context, pgx.Identifier, []string, pgx.CopyFromSource) (int64, error) {
	return 0, errors.New("prelude: CopyFrom is not supported")
}

// batchRows releases the batch and its connection when the rows close.
type batchRows struct {
	pgx.Rows
	br     pgx.BatchResults
	conn   *pgxpool.Conn
	closed bool
	err    error
}

func (r *batchRows) Close() {
	if r.closed {
		return
	}
	r.closed = true
	r.Rows.Close()
	r.err = r.Rows.Err()
	if err := r.br.Close(); err != nil && r.err == nil {
		r.err = err
	}
	r.conn.Release()
}

func (r *batchRows) Err() error {
	if r.closed {
		return r.err
	}
	return r.Rows.Err()
}
