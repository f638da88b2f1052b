// Package postgres connects canon to PostgreSQL: a pgx pool with pgvector types
// registered, and the embedded goose migrations.
package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	neturl "net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	pgxvec "github.com/pgvector/pgvector-go/pgx"
	"github.com/pressly/goose/v3"

	"github.com/canonkb/canon/db/migrations"
)

// DefaultConnectTimeout bounds opening one connection when the URL sets no
// connect_timeout.
const DefaultConnectTimeout = 5 * time.Second

// Connect opens a pool. Every connection registers pgvector's types, which needs
// the extension: a database that lacks it gets a message saying what to do.
// configure may adjust the pool's configuration (a query tracer) before it opens.
func Connect(ctx context.Context, url string, configure ...func(*pgxpool.Config)) (*pgxpool.Pool, error) {
	if url == "" {
		return nil, errors.New("no database: set DATABASE_URL (run `make db` for a local cluster)")
	}
	cfg, err := poolConfig(url, configure...)
	if err != nil {
		return nil, errors.New("DATABASE_URL " + err.Error())
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", Redact(url), err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to %s: %w", Redact(url), err)
	}
	return pool, nil
}

// poolConfig is Connect's pool configuration for url.
func poolConfig(url string, configure ...func(*pgxpool.Config)) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, errors.New("is not a valid PostgreSQL connection string: " + parseProblem(err))
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		// Without connect_timeout a dial to an unreachable host waits for the
		// request's deadline; a request should fail fast with Unavailable instead.
		cfg.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		if err := pgxvec.RegisterTypes(ctx, conn); err != nil {
			return fmt.Errorf("pgvector types (is the vector extension installed? run `canon migrate up`): %w", err)
		}
		sendVectorPointersInBinary(conn.TypeMap())
		storeVectorsAsHalfvec(conn.TypeMap())
		return nil
	}
	for _, c := range configure {
		c(cfg)
	}
	return cfg, nil
}

// CheckURL reports why url is not a connection string canon can use (nil when
// it is), without repeating it.
func CheckURL(url string) error {
	_, err := poolConfig(url)
	return err
}

// parseProblem is why pgx could not parse a connection string, without the
// string: pgx masks the password it recognises, but a malformed string can hide
// one from it.
func parseProblem(err error) string {
	msg := err.Error()
	var pce *pgconn.ParseConfigError
	if !errors.As(err, &pce) {
		return msg
	}
	// "cannot parse `<string>`: <why>"
	if i := strings.LastIndex(msg, "`: "); i >= 0 {
		return msg[i+len("`: "):]
	}
	return "unreadable"
}

// ExecModes are the values of KB_DATABASE_EXEC_MODE, pgx's query exec modes
// (pgx.QueryExecMode, set as the URL's default_query_exec_mode):
//
//	cache_statement  prepare each statement once per connection, then execute it (pgx's default)
//	cache_describe   describe each statement once per connection, execute unnamed statements
//	describe_exec    describe then execute an unnamed statement: two round trips a query
//	exec             execute an unnamed statement, typed from the Go arguments: one round trip
//	simple_protocol  the simple query protocol, arguments interpolated by pgx
//
// Behind a pooler in transaction mode that cannot keep prepared statements
// (PgBouncer before 1.21), use exec or simple_protocol: cache_statement prepares
// on one server connection and executes on another, and describe_exec's two
// round trips may land on two.
var ExecModes = []string{"cache_statement", "cache_describe", "describe_exec", "exec", "simple_protocol"}

// WithExecMode returns the connection string with default_query_exec_mode set
// to mode (one of ExecModes); an empty mode leaves it as it is.
func WithExecMode(url, mode string) string {
	if mode == "" || url == "" {
		return url
	}
	if u, err := neturl.Parse(url); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		q := u.Query()
		q.Set("default_query_exec_mode", mode)
		u.RawQuery = q.Encode()
		return u.String()
	}
	// Keyword/value form: a later keyword overrides an earlier one.
	return url + " default_query_exec_mode=" + mode
}

// Redact returns the connection string with its password removed, for messages.
func Redact(url string) string {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return "(invalid DATABASE_URL)"
	}
	return fmt.Sprintf("postgres://%s@%s:%d/%s", cfg.User, cfg.Host, cfg.Port, cfg.Database)
}

// MigrateOptions configures a migration run.
type MigrateOptions struct {
	// Log receives goose's progress lines; nil discards them.
	Log io.Writer
}

// Migrate runs the embedded migrations: "up", "down" (one step) or "status".
// The vector extension is created by the first migration (and needs a role that
// may create it).
func Migrate(ctx context.Context, url, command string, opts MigrateOptions) error {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return errors.New("DATABASE_URL is not a valid PostgreSQL connection string")
	}
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	return migrate(ctx, db, command, opts)
}

func migrate(ctx context.Context, db *sql.DB, command string, opts MigrateOptions) error {
	out := opts.Log
	if out == nil {
		out = io.Discard
	}
	provider, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS,
		goose.WithLogger(goose.NopLogger()))
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	switch command {
	case "up":
		results, err := provider.Up(ctx)
		for _, r := range results {
			fmt.Fprintf(out, "applied %s (%s)\n", r.Source.Path, r.Duration.Round(1e6))
		}
		if err != nil {
			return fmt.Errorf("migrate up: %w", err)
		}
		if len(results) == 0 {
			fmt.Fprintln(out, "schema is up to date")
		}
	case "down":
		r, err := provider.Down(ctx)
		if errors.Is(err, goose.ErrNoNextVersion) {
			fmt.Fprintln(out, "nothing to roll back")
			return nil
		}
		if err != nil {
			return fmt.Errorf("migrate down: %w", err)
		}
		if r != nil {
			fmt.Fprintf(out, "rolled back %s\n", r.Source.Path)
		}
	case "status":
		statuses, err := provider.Status(ctx)
		if err != nil {
			return fmt.Errorf("migrate status: %w", err)
		}
		for _, s := range statuses {
			applied := "pending"
			if s.State == goose.StateApplied {
				applied = "applied " + s.AppliedAt.Format("2006-01-02 15:04:05")
			}
			fmt.Fprintf(out, "%-40s %s\n", s.Source.Path, applied)
		}
	default:
		return fmt.Errorf("unknown migrate command %q: use up, down or status", command)
	}
	return nil
}

// EmbeddingDim reads the dimension the chunks.embedding column was created with, so
// an embedder of another dimension fails at startup rather than at first insert.
func EmbeddingDim(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	var dim int
	err := pool.QueryRow(ctx, `
		SELECT atttypmod FROM pg_attribute
		WHERE attrelid = 'chunks'::regclass AND attname = 'embedding'`).Scan(&dim)
	if err != nil {
		return 0, fmt.Errorf("read embedding dimension (has `canon migrate up` run?): %w", err)
	}
	return dim, nil
}

// EmbeddingType reads the type chunks.embedding is stored as: vector, or halfvec
// when the database was migrated or converted with KB_VECTOR_TYPE=halfvec.
func EmbeddingType(ctx context.Context, pool *pgxpool.Pool) (string, error) {
	var typ string
	err := pool.QueryRow(ctx, `
		SELECT format_type(atttypid, NULL) FROM pg_attribute
		WHERE attrelid = 'chunks'::regclass AND attname = 'embedding'`).Scan(&typ)
	if err != nil {
		return "", fmt.Errorf("read the embedding type (has `canon migrate up` run?): %w", err)
	}
	return typ, nil
}

// TableLayout reads how chunks, postings and lexeme_stats are laid out: single,
// or partitioned by project (migration 00061, KB_TABLE_LAYOUT).
func TableLayout(ctx context.Context, pool *pgxpool.Pool) (string, error) {
	var layout string
	if err := pool.QueryRow(ctx, `SELECT canon_table_layout()`).Scan(&layout); err != nil {
		return "", fmt.Errorf("read the table layout (has `canon migrate up` run?): %w", err)
	}
	return layout, nil
}

// MigrationVersions reports the schema's applied goose version and the newest
// migration embedded in this binary.
func MigrationVersions(ctx context.Context, pool *pgxpool.Pool) (applied, embedded int64, err error) {
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	provider, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS, goose.WithLogger(goose.NopLogger()))
	if err != nil {
		return 0, 0, fmt.Errorf("migrations: %w", err)
	}
	sources := provider.ListSources()
	if len(sources) > 0 {
		embedded = sources[len(sources)-1].Version
	}
	applied, err = provider.GetDBVersion(ctx)
	if err != nil {
		return 0, embedded, fmt.Errorf("read the schema version: %w", err)
	}
	return applied, embedded, nil
}
