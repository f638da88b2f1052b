package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/puddle/v2"
)

func TestIsUnavailable(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"terminated by an administrator", &pgconn.PgError{Code: "57P01"}, true},
		{"shutting down", &pgconn.PgError{Code: "57P02"}, true},
		{"starting up", &pgconn.PgError{Code: "57P03"}, true},
		{"connection failure", &pgconn.PgError{Code: "08006"}, true},
		{"too many clients", &pgconn.PgError{Code: "53300"}, true},
		{"unique violation", &pgconn.PgError{Code: "23505"}, false},
		{"syntax error", fmt.Errorf("search: %w", &pgconn.PgError{Code: "42601"}), false},
		{"refused", fmt.Errorf("dial: %w", syscall.ECONNREFUSED), true},
		{"reset", syscall.ECONNRESET, true},
		{"cut mid-message", fmt.Errorf("receive: %w", io.ErrUnexpectedEOF), true},
		{"closed connection", pgconn.ErrConnClosed, true},
		{"closed pool", puddle.ErrClosedPool, true},
		{"a bug", errors.New("nil map"), false},
		{"cancelled", context.Canceled, false},
	}
	for _, tc := range cases {
		if got := IsUnavailable(tc.err); got != tc.want {
			t.Errorf("%s: IsUnavailable(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
