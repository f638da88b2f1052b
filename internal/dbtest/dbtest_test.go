package dbtest

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// dropStale drops the databases of this host's exited test binaries and keeps
// those of binaries still running, this one included.
func TestDropStale(t *testing.T) {
	URL(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		t.Fatal(err)
	}
	// A cleanup, not a defer: the databases' own cleanups below run before it.
	t.Cleanup(func() { conn.Close(ctx) })

	// A pid no process can have: Linux's PID_MAX_LIMIT is 1<<22. An exited
	// child's pid can be reused at once on a busy machine, and the test then failed.
	gone := fmt.Sprintf("canon_test_%s_%d_dropstale", hostID(), 1<<22+1)
	alive := ownPrefix() + "dropstale"
	for _, name := range []string{gone, alive} {
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if _, err := conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name); err != nil {
				t.Error(err)
			}
		})
	}

	template, err := ensureTemplate(ctx, conn, os.Getenv("DATABASE_URL"))
	if err != nil {
		t.Fatal(err)
	}
	exists := func(name string) bool {
		var ok bool
		if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	// Every test binary of `make test` starting now runs dropStale too: one may be
	// dropping gone at this moment, and then this call's DROP fails on its lock.
	dropStale(ctx, conn, template)
	for deadline := time.Now().Add(10 * time.Second); exists(gone) && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		dropStale(ctx, conn, template)
	}
	if exists(gone) {
		t.Errorf("%s survived, though its process has exited", gone)
	}
	if !exists(alive) {
		t.Errorf("%s was dropped while its process runs", alive)
	}
}
