//go:build unix

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/canonkb/canon/internal/dbtest"
)

// TestThroughPgBouncer runs canon through Debian's PgBouncer (1.18: no prepared
// statements) in transaction mode, in each exec mode that works there: a bulk
// ingest (KB_INGEST_BULK_MIN_CHUNKS small, so the vector index is dropped and
// built again under the bulk lock), an incremental ingest, search, two-pass
// search, chat (its turns logged). No session state may outlive its transaction: a later
// transaction on the pooled server connections sees the server's settings, and
// no advisory lock is left.
func TestThroughPgBouncer(t *testing.T) {
	through := dbtest.PgBouncer(t)
	for _, mode := range []string{"exec", "simple_protocol"} {
		t.Run(mode, func(t *testing.T) {
			direct := dbtest.FreshURL(t)
			t.Setenv("DATABASE_URL", through(direct))
			t.Setenv("KB_DATABASE_EXEC_MODE", mode)
			t.Setenv("KB_INGEST_BULK_MIN_CHUNKS", "10")
			ctx := context.Background()
			conn, err := pgx.Connect(ctx, direct)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = conn.Close(ctx) }()
			want := sessionSettings(t, conn)

			dir := t.TempDir()
			if err := os.CopyFS(dir, os.DirFS("../../examples/handbook")); err != nil {
				t.Fatal(err)
			}
			before := indexOID(t, conn)
			if out, err := run(t, "ingest", dir, "--project", "platform"); err != nil || !strings.Contains(out, "0 errors") {
				t.Fatalf("bulk ingest: %v\n%s", err, out)
			}
			bulk := indexOID(t, conn)
			if bulk == before {
				t.Error("the first ingest was not a bulk load: the vector index was not built again")
			}

			// One file changed: a few chunks, stored with the index in place.
			page := filepath.Join(dir, "platform", "runbooks", "rb-deploy-rollback.md")
			text, err := os.ReadFile(page)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(page, append(text, []byte("\n\nRoll back through PgBouncer too.\n")...), 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := run(t, "ingest", dir, "--project", "platform"); err != nil || !strings.Contains(out, "1 updated") {
				t.Fatalf("incremental ingest: %v\n%s", err, out)
			}
			if indexOID(t, conn) != bulk {
				t.Error("an incremental ingest rebuilt the vector index")
			}

			out, err := run(t, "search", "what cache layer did we standardise on?", "--project", "platform", "--limit", "3")
			if err != nil || !strings.Contains(out, "dec-cache-v2") {
				t.Errorf("search: %v\n%s", err, out)
			}
			out, err = run(t, "search", "roll back through pgbouncer", "--project", "platform", "--limit", "3")
			if err != nil || !strings.Contains(out, "rb-deploy-rollback") {
				t.Errorf("search for the changed text: %v\n%s", err, out)
			}
			out, err = run(t, "ask", "What has Dana been working on?", "--project", "platform")
			if err != nil || !strings.Contains(out, "two_pass (dana)") || !strings.Contains(out, "Citations:") {
				t.Errorf("ask (two-pass): %v\n%s", err, out)
			}
			out, err = run(t, "ask", "how do deployment rollbacks work?", "--project", "platform")
			if err != nil || !strings.Contains(out, "rb-deploy-rollback") {
				t.Errorf("ask: %v\n%s", err, out)
			}
			// A lifecycle change and its audit row (before and after as JSON).
			if out, err := run(t, "canon", "deprecate", "rb-deploy-rollback", "--project", "platform"); err != nil {
				t.Errorf("deprecate: %v\n%s", err, out)
			}
			var audited int
			if err := conn.QueryRow(ctx, `SELECT count(*) FROM lifecycle_audit
				WHERE operation = 'deprecate' AND after ->> 'status' = 'deprecated'`).Scan(&audited); err != nil {
				t.Fatal(err)
			}
			if audited != 1 {
				t.Errorf("%d deprecations audited, want 1", audited)
			}
			// Both turns logged, their filters and citations as JSON (sent as bytea in
			// these modes, a []byte parameter was refused and the entries lost).
			var logged, cited int
			if err := conn.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE jsonb_array_length(citations) > 0)
				FROM chat_logs`).Scan(&logged, &cited); err != nil {
				t.Fatal(err)
			}
			if logged != 2 || cited != 2 {
				t.Errorf("%d chat turns logged, %d with citations; want 2 and 2", logged, cited)
			}

			// Every pooled server connection: hold them all at once, so each is read.
			pooled, err := pgx.Connect(ctx, through(direct))
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = pooled.Close(ctx) }()
			for range 4 {
				if got := sessionSettings(t, pooled); got != want {
					t.Errorf("a transaction through PgBouncer sees %q, the server's settings are %q: session state leaked", got, want)
				}
			}
			var locks int
			if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_locks
				WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&locks); err != nil {
				t.Fatal(err)
			}
			if locks != 0 {
				t.Errorf("%d advisory locks left behind", locks)
			}
		})
	}
}

// sessionSettings are the settings canon's statements change, as a new
// transaction sees them.
func sessionSettings(t *testing.T, conn *pgx.Conn) string {
	t.Helper()
	var s string
	// The vector literal loads pgvector, whose settings exist only once it is loaded.
	err := conn.QueryRow(context.Background(), `SELECT concat_ws(' ', '[1]'::vector, current_setting('hnsw.ef_search', true),
		current_setting('hnsw.iterative_scan', true), current_setting('plan_cache_mode'), current_setting('jit'),
		current_setting('max_parallel_workers_per_gather'), current_setting('maintenance_work_mem'),
		current_setting('max_parallel_maintenance_workers'))`, pgx.QueryExecModeSimpleProtocol).Scan(&s)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func indexOID(t *testing.T, conn *pgx.Conn) uint32 {
	t.Helper()
	var oid uint32
	// chunks_embedding_hnsw, or its project's partition's own (KB_TABLE_LAYOUT=partitioned).
	if err := conn.QueryRow(context.Background(), `SELECT coalesce(max(oid), 0) FROM pg_class WHERE relname ~ '^chunks(_p\d+)?_embedding_hnsw$'`).Scan(&oid); err != nil {
		t.Fatal(err)
	}
	return oid
}
