package main

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/canonkb/canon/internal/dbtest"
)

// embeddingStorage reads chunks.embedding's type and the operator classes of the
// indexes over it.
func embeddingStorage(t *testing.T, url string) (string, []string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var typ string
	if err := conn.QueryRow(ctx, `SELECT format_type(atttypid, atttypmod) FROM pg_attribute
		WHERE attrelid = 'chunks'::regclass AND attname = 'embedding'`).Scan(&typ); err != nil {
		t.Fatal(err)
	}
	// Partitioned by project (KB_TABLE_LAYOUT), the indexes are the partitions' own,
	// chunks_p<id>_embedding_hnsw, made from the definitions in partition_indexes.
	rows, err := conn.Query(ctx, `SELECT DISTINCT regexp_replace(name, '^chunks_p\d+_', 'chunks_') || ' ' || substring(def from '\((embedding \w+)\)')
		FROM (SELECT indexname, indexdef FROM pg_indexes WHERE tablename ~ '^chunks(_p\d+)?$'
			UNION ALL SELECT name, definition FROM partition_indexes WHERE table_name = 'chunks') i (name, def)
		WHERE def LIKE '%hnsw%' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	indexes, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return typ, indexes
}

// KB_VECTOR_TYPE: a new database is migrated with it; the database is the truth
// afterwards (commands follow it, and refuse a setting naming the other type
// with the way to convert); `canon migrate up` converts either way, indexes and
// searches included.
func TestVectorTypeMigrateConvertAndMismatch(t *testing.T) {
	fresh, existing := dbtest.EmptyURL(t), dbtest.FreshURL(t)

	t.Setenv("DATABASE_URL", fresh)
	t.Setenv("KB_VECTOR_TYPE", "halfvec")
	if out, err := run(t, "migrate", "up"); err != nil {
		t.Fatalf("migrate up: %v\n%s", err, out)
	}
	typ, indexes := embeddingStorage(t, fresh)
	want := []string{"chunks_embedding_hnsw embedding halfvec_cosine_ops", "chunks_rejected_hnsw embedding halfvec_cosine_ops"}
	if typ != "halfvec(384)" || strings.Join(indexes, ";") != strings.Join(want, ";") {
		t.Errorf("new database with KB_VECTOR_TYPE=halfvec: %s, %v; want halfvec(384), %v", typ, indexes, want)
	}

	t.Setenv("DATABASE_URL", existing)
	out, err := run(t, "ingest", "../../examples/handbook", "--project", "platform")
	if err == nil || !strings.Contains(err.Error(), "stores chunks.embedding as vector") || !strings.Contains(err.Error(), "canon migrate up") {
		t.Fatalf("ingest with KB_VECTOR_TYPE=halfvec into a vector database: %v\n%s", err, out)
	}
	t.Setenv("KB_VECTOR_TYPE", "")
	if out, err := run(t, "ingest", "../../examples/handbook", "--project", "platform"); err != nil {
		t.Fatalf("ingest following the database: %v\n%s", err, out)
	}
	vectorHits, err := run(t, "search", "what cache layer did we standardise on?", "--project", "platform", "--no-hierarchy", "-n", "3")
	if err != nil {
		t.Fatalf("search: %v\n%s", err, vectorHits)
	}

	t.Setenv("KB_VECTOR_TYPE", "halfvec")
	if out, err := run(t, "migrate", "up"); err != nil || !strings.Contains(out, "chunks.embedding is now halfvec") {
		t.Fatalf("migrate up converting to halfvec: %v\n%s", err, out)
	}
	if typ, indexes := embeddingStorage(t, existing); typ != "halfvec(384)" || strings.Join(indexes, ";") != strings.Join(want, ";") {
		t.Errorf("converted database: %s, %v; want halfvec(384), %v", typ, indexes, want)
	}
	if out, err := run(t, "migrate", "up"); err != nil || strings.Contains(out, "now halfvec") {
		t.Errorf("migrate up again converted again: %v\n%s", err, out)
	}
	halfHits, err := run(t, "search", "what cache layer did we standardise on?", "--project", "platform", "--no-hierarchy", "-n", "3")
	if err != nil {
		t.Fatalf("search on halfvec: %v\n%s", err, halfHits)
	}
	if a, b := primaryDocs(vectorHits), primaryDocs(halfHits); a != b || a == "" {
		t.Errorf("primary documents differ: vector %q, halfvec %q", a, b)
	}

	t.Setenv("KB_VECTOR_TYPE", "vector")
	if out, err := run(t, "search", "cache", "--project", "platform"); err == nil || !strings.Contains(err.Error(), "KB_VECTOR_TYPE is vector but the database stores chunks.embedding as halfvec") {
		t.Errorf("search with KB_VECTOR_TYPE=vector on halfvec: %v\n%s", err, out)
	}
	if out, err := run(t, "migrate", "up"); err != nil || !strings.Contains(out, "chunks.embedding is now vector") {
		t.Fatalf("migrate up converting back: %v\n%s", err, out)
	}
	if typ, indexes := embeddingStorage(t, existing); typ != "vector(384)" || !strings.Contains(strings.Join(indexes, ";"), "chunks_rejected_hnsw embedding vector_cosine_ops") {
		t.Errorf("converted back: %s, %v", typ, indexes)
	}

	t.Setenv("KB_VECTOR_TYPE", "float8")
	if _, err := run(t, "search", "cache", "--project", "platform"); err == nil || !strings.Contains(err.Error(), "KB_VECTOR_TYPE must be vector or halfvec") {
		t.Errorf("KB_VECTOR_TYPE=float8: %v", err)
	}
}

// primaryDocs is the document ids of a `canon search` listing's primary hits, in order.
func primaryDocs(out string) string {
	var ids []string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "RELATED") || strings.HasPrefix(line, "RUNNER") {
			break
		}
		f := strings.Fields(line)
		if len(f) >= 3 && len(f[0]) <= 2 && strings.Contains(f[1], ".") {
			ids = append(ids, f[2])
		}
	}
	return strings.Join(ids, " ")
}
