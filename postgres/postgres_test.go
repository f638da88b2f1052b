package postgres_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/canonkb/canon/internal/dbtest"
	"github.com/canonkb/canon/postgres"
)

func TestMigrateUpStatusDownUp(t *testing.T) {
	t.Parallel()
	url := dbtest.EmptyURL(t)
	ctx := context.Background()
	var out bytes.Buffer
	if err := postgres.Migrate(ctx, url, "up", postgres.MigrateOptions{Log: &out}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "applied 00001_schema.sql") {
		t.Errorf("up output: %s", out.String())
	}
	out.Reset()
	if err := postgres.Migrate(ctx, url, "up", postgres.MigrateOptions{Log: &out}); err != nil || !strings.Contains(out.String(), "up to date") {
		t.Errorf("second up should be a no-op: %v %s", err, out.String())
	}
	out.Reset()
	if err := postgres.Migrate(ctx, url, "status", postgres.MigrateOptions{Log: &out}); err != nil || strings.Contains(out.String(), "pending") {
		t.Errorf("status: %v %s", err, out.String())
	}
	pool, err := postgres.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	dim, err := postgres.EmbeddingDim(ctx, pool)
	pool.Close()
	if err != nil || dim != 384 {
		t.Errorf("embedding dim = %d, %v; want 384", dim, err)
	}
	// Every migration rolls back cleanly and applies again.
	for i := 0; i < 20; i++ {
		out.Reset()
		if err := postgres.Migrate(ctx, url, "down", postgres.MigrateOptions{Log: &out}); err != nil {
			t.Fatal(err)
		}
		if out.Len() == 0 {
			break
		}
	}
	if err := postgres.Migrate(ctx, url, "up", postgres.MigrateOptions{}); err != nil {
		t.Fatalf("up after down: %v", err)
	}
}

func TestEmbeddingDimIsFixedAtMigrationTime(t *testing.T) {
	t.Setenv("KB_EMBEDDING_DIM", "16")
	url := dbtest.EmptyURL(t)
	ctx := context.Background()
	if err := postgres.Migrate(ctx, url, "up", postgres.MigrateOptions{}); err != nil {
		t.Fatal(err)
	}
	pool, err := postgres.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if dim, err := postgres.EmbeddingDim(ctx, pool); err != nil || dim != 16 {
		t.Errorf("embedding dim = %d, %v; want 16", dim, err)
	}
}

// KB_VECTOR_TYPE=halfvec at migration time stores chunk embeddings as halfvec;
// rolling back migration 00040 returns them to vector, and applying it again
// (the setting unchanged) to halfvec.
func TestVectorTypeIsFixedAtMigrationTime(t *testing.T) {
	t.Setenv("KB_VECTOR_TYPE", "halfvec")
	url := dbtest.EmptyURL(t)
	ctx := context.Background()
	// stored reports chunks.embedding's type and whether migration 00040 is applied.
	stored := func() (string, bool) {
		pool, err := postgres.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		typ, err := postgres.EmbeddingType(ctx, pool)
		if err != nil {
			t.Fatal(err)
		}
		var applied bool
		if err := pool.QueryRow(ctx, "SELECT to_regproc('chunks_embedding_set_type') IS NOT NULL").Scan(&applied); err != nil {
			t.Fatal(err)
		}
		return typ, applied
	}
	if err := postgres.Migrate(ctx, url, "up", postgres.MigrateOptions{}); err != nil {
		t.Fatal(err)
	}
	if typ, _ := stored(); typ != "halfvec" {
		t.Errorf("migrated with KB_VECTOR_TYPE=halfvec: %s", typ)
	}
	// Down to just before 00040 (every later migration rolls back first).
	for range 100 {
		if err := postgres.Migrate(ctx, url, "down", postgres.MigrateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, applied := stored(); !applied {
			break
		}
	}
	if typ, applied := stored(); applied || typ != "vector" {
		t.Errorf("rolled back 00040 (%v): %s; want vector", !applied, typ)
	}
	if err := postgres.Migrate(ctx, url, "up", postgres.MigrateOptions{}); err != nil {
		t.Fatal(err)
	}
	if typ, _ := stored(); typ != "halfvec" {
		t.Errorf("up again: %s; want halfvec", typ)
	}
}

func TestUnknownCommandAndBadURL(t *testing.T) {
	t.Parallel()
	if err := postgres.Migrate(context.Background(), dbtest.URL(t), "sideways", postgres.MigrateOptions{}); err == nil {
		t.Error("unknown command should fail")
	}
	_, err := postgres.Connect(context.Background(), "postgres://user:s3cret@127.0.0.1:1/x")
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("a failed connection must not print the password: %v", err)
	}
	if _, err := postgres.Connect(context.Background(), ""); err == nil || !strings.Contains(err.Error(), "DATABASE_URL") {
		t.Errorf("missing URL: %v", err)
	}
}

func TestLSN(t *testing.T) {
	for _, tc := range []struct {
		text string
		pos  int64
	}{
		{"0/0", 0},
		{"0/16B3748", 0x16B3748},
		{"1A/FFFFFFFF", 0x1A<<32 | 0xFFFFFFFF},
		{"7FFFFFFF/0", 0x7FFFFFFF << 32},
	} {
		if got := postgres.FormatLSN(tc.pos); got != tc.text {
			t.Errorf("FormatLSN(%d) = %s; want %s", tc.pos, got, tc.text)
		}
		if got, err := postgres.ParseLSN(tc.text); err != nil || got != tc.pos {
			t.Errorf("ParseLSN(%s) = %d, %v; want %d", tc.text, got, err, tc.pos)
		}
	}
	for _, bad := range []string{"", "0", "0/", "/0", "0/1/2", "g/0", "0/100000000", "80000000/0", "-1/0", " 0/1"} {
		if _, err := postgres.ParseLSN(bad); err == nil {
			t.Errorf("ParseLSN(%q) accepted", bad)
		}
	}
}
