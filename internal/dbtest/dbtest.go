// Package dbtest gives each test package its own freshly migrated database on the
// PostgreSQL named by DATABASE_URL (the cluster `make db` starts). Without
// DATABASE_URL a test skips, except in CI (CI=true), where it fails: CI must never
// pass by skipping the database.
package dbtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	neturl "net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/canonkb/canon/db/migrations"
	"github.com/canonkb/canon/postgres"
)

var (
	once    sync.Once
	shared  string
	initErr error
	// created numbers this binary's databases: parallel tests may create two in one clock tick.
	created atomic.Int64
)

// URL returns the URL of this test binary's database, creating and migrating it on
// first use. Databases are cloned from a template migrated once per schema version,
// so a package's database costs one CREATE DATABASE.
func URL(t testing.TB) string {
	t.Helper()
	admin := os.Getenv("DATABASE_URL")
	if admin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("DATABASE_URL is not set; in CI the database tests must run (make test sets it)")
		}
		t.Skip("DATABASE_URL not set; run `make db` and export its URL (make test does both)")
	}
	once.Do(func() { shared, initErr = create(admin) })
	if initErr != nil {
		t.Fatalf("test database: %v", initErr)
	}
	return shared
}

// Pool returns a pool on this test binary's database, closed when the test ends.
func Pool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := postgres.Connect(ctx, URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// FreshPool returns a pool on a new database of its own, cloned from the migrated
// template (tens of milliseconds), for tests that count rows.
func FreshPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	url := FreshURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := postgres.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// FreshURL creates a migrated database of the test's own and returns its URL; it is
// dropped when the test ends.
func FreshURL(t testing.TB) string {
	t.Helper()
	URL(t)
	admin := os.Getenv("DATABASE_URL")
	url, err := create(admin)
	if err != nil {
		t.Fatalf("test database: %v", err)
	}
	t.Cleanup(func() { drop(admin, url) })
	return url
}

func drop(admin, url string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	u, err := neturl.Parse(url)
	if err != nil {
		return
	}
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	// Best effort: a database left behind is dropped by the next run (dropStale).
	_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+strings.TrimPrefix(u.Path, "/")+" WITH (FORCE)")
}

func create(admin string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", fmt.Errorf("connect %s: %w", postgres.Redact(admin), err)
	}
	defer conn.Close(ctx)

	template, err := ensureTemplate(ctx, conn, admin)
	if err != nil {
		return "", err
	}
	name := fmt.Sprintf("%s%d_%d", ownPrefix(), time.Now().UnixNano()%1e9, created.Add(1))
	if _, err := conn.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s", name, template)); err != nil {
		return "", fmt.Errorf("create %s: %w", name, err)
	}
	dropStale(ctx, conn, template)
	return withDatabase(admin, name)
}

// ownPrefix starts the name of every database this test binary creates:
// canon_test_<host>_<pid>_. A package's shared database lives as long as its
// test binary, which has no hook at exit to drop it; the next run on the same
// host drops it once that process is gone (dropStale).
func ownPrefix() string {
	return fmt.Sprintf("canon_test_%s_%d_", hostID(), os.Getpid())
}

// hostID is a short hash of the host name: process ids mean something only on
// the host that started them.
func hostID() string {
	host, _ := os.Hostname()
	sum := sha256.Sum256([]byte(host))
	return hex.EncodeToString(sum[:3])
}

// ensureTemplate migrates a template database named after the migrations' hash,
// once; an advisory lock serialises test binaries that start together.
func ensureTemplate(ctx context.Context, conn *pgx.Conn, admin string) (string, error) {
	h := sha256.New()
	err := fs.WalkDir(migrations.FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(migrations.FS, path)
		h.Write([]byte(path))
		h.Write(b)
		return err
	})
	if err != nil {
		return "", err
	}
	h.Write([]byte(os.Getenv("KB_EMBEDDING_DIM")))
	h.Write([]byte(os.Getenv("KB_VECTOR_TYPE")))
	h.Write([]byte(os.Getenv("KB_TABLE_LAYOUT")))
	name := "canon_template_" + hex.EncodeToString(h.Sum(nil))[:16]

	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock(872364)"); err != nil {
		return "", err
	}
	// Closing the connection releases the lock too, should the unlock fail.
	defer func() { _, _ = conn.Exec(context.Background(), "SELECT pg_advisory_unlock(872364)") }()
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return name, nil
	}
	building := name + "_build"
	// A crashed run's leftover; if it cannot go, CREATE DATABASE below says so.
	_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+building)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+building); err != nil {
		return "", err
	}
	url, err := withDatabase(admin, building)
	if err != nil {
		return "", err
	}
	if err := postgres.Migrate(ctx, url, "up", postgres.MigrateOptions{}); err != nil {
		return "", err
	}
	if _, err := conn.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s RENAME TO %s", building, name)); err != nil {
		return "", err
	}
	return name, nil
}

// dropStale removes the databases of test binaries that have exited on this
// host (each package's shared database, and those of killed runs), and any
// test database or template of another schema version older than a day.
// Without it every `make test` left one database per package behind.
func dropStale(ctx context.Context, conn *pgx.Conn, template string) {
	rows, err := conn.Query(ctx, `
		SELECT datname,
		       (pg_stat_file('base/' || oid || '/PG_VERSION')).modification < now() - interval '1 day' AS old
		FROM pg_database
		WHERE datname LIKE 'canon\_test\_%' OR datname LIKE 'canon\_template\_%'`)
	if err != nil {
		return
	}
	type database struct {
		Name string
		Old  bool
	}
	dbs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[database])
	if err != nil {
		return
	}
	host := "canon_test_" + hostID() + "_"
	for _, d := range dbs {
		drop := "DROP DATABASE IF EXISTS " + pgx.Identifier{d.Name}.Sanitize()
		if rest, ok := strings.CutPrefix(d.Name, host); ok {
			// canon_test_<host>_<pid>_...: made by process pid of this host.
			pid, err := strconv.Atoi(strings.SplitN(rest, "_", 2)[0])
			if err == nil && pid != os.Getpid() && !processAlive(pid) {
				_, _ = conn.Exec(ctx, drop+" WITH (FORCE)") // best effort: the next run tries again
			}
			continue
		}
		// Anything else only when a day old, and never while in use (a plain DROP
		// fails then): another host's run, or another schema's template.
		if d.Old && d.Name != template {
			_, _ = conn.Exec(ctx, drop) // fails while in use, by design
		}
	}
}

func withDatabase(admin, name string) (string, error) {
	u, err := neturl.Parse(admin)
	if err != nil || !strings.HasPrefix(u.Scheme, "postgres") {
		return "", fmt.Errorf("DATABASE_URL must be a postgres:// URL for tests")
	}
	u.Path = "/" + name
	return u.String(), nil
}

// EmptyURL creates an empty database (no migrations) for tests of the migrations
// themselves; it is dropped when the test ends.
func EmptyURL(t testing.TB) string {
	t.Helper()
	URL(t)
	admin := os.Getenv("DATABASE_URL")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	name := fmt.Sprintf("%sempty_%d", ownPrefix(), time.Now().UnixNano()%1e9)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	url, err := withDatabase(admin, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { drop(admin, url) })
	return url
}

// Port returns the port of the test's n-th extra server (0 a PgBouncer, 1 a
// primary, 2 its replica, 3 server's database proxy), n from 0 to 3. KB_TEST_PORT_BASE sets the first (a
// developer's own range); otherwise it is derived from DATABASE_URL's port,
// which scripts/db.sh takes from KB_PG_PORT, so clones on different KB_PG_PORTs
// do not share one: 16384 + 4×(port mod 4096) + n. That stays below Linux's
// ephemeral ports (32768 and up), which the tests' own client connections take:
// a server told to listen on a port a client socket holds cannot bind it.
func Port(t testing.TB, n int) int {
	t.Helper()
	if n < 0 || n >= extraServers {
		t.Fatalf("extra server %d: at most %d", n, extraServers)
	}
	if base := os.Getenv("KB_TEST_PORT_BASE"); base != "" {
		p, err := strconv.Atoi(base)
		if err != nil || p < 1 || p+n > 65535 {
			t.Fatalf("KB_TEST_PORT_BASE=%q is not a port", base)
		}
		return p + n
	}
	return 16384 + extraServers*(adminPort(t)%4096) + n
}

// extraServers is how many extra servers a test may start (Port's n).
const extraServers = 4

func adminPort(t testing.TB) int {
	t.Helper()
	URL(t)
	cfg, err := pgx.ParseConfig(os.Getenv("DATABASE_URL"))
	if err != nil {
		t.Fatalf("DATABASE_URL: %v", err)
	}
	return int(cfg.Port)
}
