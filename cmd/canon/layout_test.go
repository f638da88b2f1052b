package main

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/canonkb/canon/internal/dbtest"
)

// tableLayout reads the layout the database records (migration 00061).
func tableLayout(t *testing.T, url string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var layout string
	if err := conn.QueryRow(ctx, `SELECT canon_table_layout()`).Scan(&layout); err != nil {
		t.Fatal(err)
	}
	return layout
}

// KB_TABLE_LAYOUT, like KB_VECTOR_TYPE: a new database is migrated with it; the
// database is the truth afterwards (commands follow it and refuse a setting
// naming the other layout, saying how to convert); `canon migrate up` converts
// either way, and searches rank alike in both.
func TestTableLayoutMigrateConvertAndMismatch(t *testing.T) {
	fresh, existing := dbtest.EmptyURL(t), dbtest.FreshURL(t)

	t.Setenv("DATABASE_URL", fresh)
	t.Setenv("KB_TABLE_LAYOUT", "partitioned")
	if out, err := run(t, "migrate", "up"); err != nil {
		t.Fatalf("migrate up: %v\n%s", err, out)
	}
	if got := tableLayout(t, fresh); got != "partitioned" {
		t.Errorf("new database with KB_TABLE_LAYOUT=partitioned: %s", got)
	}

	t.Setenv("DATABASE_URL", existing)
	start := tableLayout(t, existing)
	other := map[string]string{"single": "partitioned", "partitioned": "single"}[start]
	t.Setenv("KB_TABLE_LAYOUT", other)
	out, err := run(t, "ingest", "../../examples/handbook", "--project", "platform")
	if err == nil || !strings.Contains(err.Error(), "KB_TABLE_LAYOUT is "+other+" but the database's chunks, postings and lexeme_stats are "+start) ||
		!strings.Contains(err.Error(), "canon migrate up") {
		t.Fatalf("ingest with KB_TABLE_LAYOUT=%s into a %s database: %v\n%s", other, start, err, out)
	}
	t.Setenv("KB_TABLE_LAYOUT", "")
	if out, err := run(t, "ingest", "../../examples/handbook", "--project", "platform"); err != nil {
		t.Fatalf("ingest following the database: %v\n%s", err, out)
	}
	before, err := run(t, "search", "what cache layer did we standardise on?", "--project", "platform", "--no-hierarchy", "-n", "3")
	if err != nil {
		t.Fatalf("search: %v\n%s", err, before)
	}

	for _, target := range []string{other, start} {
		t.Setenv("KB_TABLE_LAYOUT", target)
		if out, err := run(t, "migrate", "up"); err != nil || !strings.Contains(out, "chunks, postings and lexeme_stats are now "+target) {
			t.Fatalf("migrate up converting to %s: %v\n%s", target, err, out)
		}
		if got := tableLayout(t, existing); got != target {
			t.Errorf("converted to %s: %s", target, got)
		}
		if out, err := run(t, "migrate", "up"); err != nil || strings.Contains(out, "are now") {
			t.Errorf("migrate up again converted again: %v\n%s", err, out)
		}
		after, err := run(t, "search", "what cache layer did we standardise on?", "--project", "platform", "--no-hierarchy", "-n", "3")
		if err != nil {
			t.Fatalf("search on %s: %v\n%s", target, err, after)
		}
		if a, b := primaryDocs(before), primaryDocs(after); a != b || a == "" {
			t.Errorf("primary documents differ: %s %q, %s %q", start, a, target, b)
		}
	}

	t.Setenv("KB_TABLE_LAYOUT", "sharded")
	if _, err := run(t, "search", "cache", "--project", "platform"); err == nil || !strings.Contains(err.Error(), "KB_TABLE_LAYOUT must be single or partitioned") {
		t.Errorf("KB_TABLE_LAYOUT=sharded: %v", err)
	}
}
