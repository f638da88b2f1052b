package scripts_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestDBFromPrivateDirectory provisions a cluster with db.sh from a clone inside a
// 0700 directory, as `git clone … /root/canon` makes under root's home: the server
// runs as postgres, who cannot traverse it, so the cluster must live elsewhere.
func TestDBFromPrivateDirectory(t *testing.T) {
	if os.Getenv("DATABASE_URL") == "" && os.Getenv("CI") != "true" {
		t.Skip("needs PostgreSQL and pgvector installed; run `make db` first (make test does)")
	}
	private := t.TempDir()
	if err := os.Chmod(private, 0o700); err != nil {
		t.Fatal(err)
	}
	clone := filepath.Join(private, "canon")
	if err := os.MkdirAll(filepath.Join(clone, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"db.sh", "apt.sh"} {
		script, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(clone, "scripts", name), script, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dbsh := filepath.Join(clone, "scripts", "db.sh")
	port := strconv.Itoa(freePort(t))
	run := func(arg string) string {
		t.Helper()
		// Not t.Context(): the cleanup's destroy runs after it is cancelled.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, dbsh, arg)
		cmd.Dir = clone // as a user who cloned into a private directory and runs make there
		cmd.Env = append(os.Environ(), "KB_PG_PORT="+port)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("db.sh %s: %v\n%s", arg, err, stderr.String())
		}
		if strings.Contains(stderr.String(), "Permission denied") {
			t.Errorf("db.sh %s reported a permission problem:\n%s", arg, stderr.String())
		}
		return strings.TrimSpace(string(out))
	}
	t.Cleanup(func() { run("destroy") })

	url := run("start")
	dir := run("dir")
	if os.Getuid() == 0 && strings.HasPrefix(dir, private) {
		t.Errorf("as root the data directory %s is inside the private directory, where postgres cannot reach it", dir)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect to the cluster db.sh started: %v", err)
	}
	defer conn.Close(ctx)
	var version string
	if err := conn.QueryRow(ctx, "SELECT extversion FROM pg_extension WHERE extname = 'vector'").Scan(&version); err != nil {
		t.Fatalf("pgvector in the new database: %v", err)
	}
	// Idempotent: a second start finds the running cluster.
	if again := run("start"); again != url {
		t.Errorf("second start printed %q, want %q", again, url)
	}
	conn.Close(ctx)
	run("destroy")
	if _, err := os.Stat(filepath.Join(dir, "PG_VERSION")); !os.IsNotExist(err) {
		t.Errorf("destroy left %s behind (stat: %v)", dir, err)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	var lc net.ListenConfig
	ln, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
