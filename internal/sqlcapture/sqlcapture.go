// Package sqlcapture records the statement a sqlc query function would send,
// instead of sending it: `canon search --sql` prints it bound, and tests EXPLAIN it.
package sqlcapture

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrCaptured is what every method returns: the query function stops there.
var ErrCaptured = errors.New("statement captured, not sent")

// Statement is a db.DBTX that keeps the last statement and its arguments.
type Statement struct {
	SQL  string
	Args []any
}

// Query records the statement and returns ErrCaptured.
func (s *Statement) Query(_ context.Context, sql string, args ...any) (pgx.Rows, error) {
	s.SQL, s.Args = sql, args
	return nil, ErrCaptured
}

// Exec records the statement and returns ErrCaptured.
func (s *Statement) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	s.SQL, s.Args = sql, args
	return pgconn.CommandTag{}, ErrCaptured
}

// QueryRow records nothing: a pgx.Row cannot carry the error, and no query
// function captured here uses it.
func (s *Statement) QueryRow(context.Context, string, ...any) pgx.Row { return nil }

// CopyFrom records nothing (no captured statement copies) and returns ErrCaptured.
func (s *Statement) CopyFrom(context.Context, pgx.Identifier, []string, pgx.CopyFromSource) (int64, error) {
	return 0, ErrCaptured
}
