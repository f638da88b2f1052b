package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/canonkb/canon/internal/dbtest"
)

// TestServeRefusesASchemaBehind: after `canon migrate down` the schema lacks
// this binary's newest migration, and serve refuses to start, saying how to fix it.
func TestServeRefusesASchemaBehind(t *testing.T) {
	t.Setenv("DATABASE_URL", dbtest.FreshURL(t))
	if out, err := run(t, "migrate", "down"); err != nil {
		t.Fatalf("migrate down: %v\n%s", err, out)
	}
	cfg, err := loadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	listened := false
	err = serve(ctx, "127.0.0.1:0", cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), func(net.Addr) {
		listened = true
		cancel()
	})
	if listened || err == nil || !strings.Contains(err.Error(), "run `canon migrate up`") {
		t.Errorf("serve on a schema behind the binary: listened %v, error %v", listened, err)
	}
}
