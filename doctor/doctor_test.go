package doctor_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/canonkb/canon/doctor"
	"github.com/canonkb/canon/internal/dbtest"
)

func statusOf(checks []doctor.Check, name string) doctor.Check {
	for _, c := range checks {
		if c.Name == name {
			return c
		}
	}
	return doctor.Check{}
}

func TestDoctor(t *testing.T) {
	ok := func(context.Context) error { return nil }
	down := func(context.Context) error { return errors.New("connection refused") }
	cases := []struct {
		name    string
		pool    func(t testing.TB) *pgxpool.Pool
		opts    doctor.Options
		check   string
		want    doctor.Status
		failing bool
	}{
		{name: "healthy schema", pool: dbtest.Pool, opts: doctor.Options{EmbeddingDim: 384},
			check: "indexes present and valid", want: doctor.OK},
		{name: "migrations current", pool: dbtest.Pool, opts: doctor.Options{EmbeddingDim: 384},
			check: "migrations current", want: doctor.OK},
		{name: "dimension matches", pool: dbtest.Pool, opts: doctor.Options{EmbeddingDim: 384},
			check: "embedding dimension", want: doctor.OK},
		{name: "dimension mismatch", pool: dbtest.Pool, opts: doctor.Options{EmbeddingDim: 1536},
			check: "embedding dimension", want: doctor.Fail, failing: true},
		{name: "hash embedder follows the schema", pool: dbtest.Pool, opts: doctor.Options{EmbeddingDim: 1536, FollowsSchema: true},
			check: "embedding dimension", want: doctor.OK},
		{name: "invalid index", pool: invalidIndex, opts: doctor.Options{EmbeddingDim: 384},
			check: "indexes present and valid", want: doctor.Fail, failing: true},
		{name: "no HNSW index", pool: noHNSW, opts: doctor.Options{EmbeddingDim: 384},
			check: "indexes present and valid", want: doctor.Fail, failing: true},
		{name: "ef_search too low", pool: lowEfSearch, opts: doctor.Options{EmbeddingDim: 384},
			check: "hnsw.ef_search", want: doctor.Warn},
		{name: "embedder reachable", pool: dbtest.Pool, opts: doctor.Options{EmbeddingDim: 384, Embedder: ok},
			check: "embedder reachable", want: doctor.OK},
		{name: "LLM down", pool: dbtest.Pool, opts: doctor.Options{EmbeddingDim: 384, LLM: down},
			check: "LLM provider reachable", want: doctor.Fail, failing: true},
		{name: "pgvector below 0.8.4", pool: dbtest.Pool, opts: doctor.Options{EmbeddingDim: 384},
			check: "pgvector version", want: pgvectorVerdict(t)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Pool = tc.pool(t)
			checks := doctor.Run(context.Background(), tc.opts)
			got := statusOf(checks, tc.check)
			if got.Status != tc.want {
				t.Errorf("%s = %+v, want %s", tc.check, got, tc.want)
			}
			if got.Status != doctor.OK && got.Action == "" {
				t.Errorf("%s is %s without an action", tc.check, got.Status)
			}
			if doctor.Failed(checks) != tc.failing {
				t.Errorf("Failed = %v, want %v: %+v", doctor.Failed(checks), tc.failing, checks)
			}
		})
	}
}

// pgvectorVerdict is WARN on the test cluster's pgvector below 0.8.4, else OK.
func pgvectorVerdict(t *testing.T) doctor.Status {
	var v string
	if err := dbtest.Pool(t).QueryRow(context.Background(), `SELECT extversion FROM pg_extension WHERE extname = 'vector'`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	if doctor.VersionLess(v, "0.8.4") {
		return doctor.Warn
	}
	return doctor.OK
}

// invalidIndex leaves an invalid index behind, as a failed CREATE INDEX CONCURRENTLY does.
func invalidIndex(t testing.TB) *pgxpool.Pool {
	pool := dbtest.FreshPool(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `CREATE TABLE doctor_dup (x int); INSERT INTO doctor_dup VALUES (1), (1)`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `CREATE UNIQUE INDEX CONCURRENTLY doctor_dup_x ON doctor_dup (x)`); err == nil {
		t.Fatal("a unique index over duplicates was built")
	}
	return pool
}

func noHNSW(t testing.TB) *pgxpool.Pool {
	pool := dbtest.FreshPool(t)
	_, err := pool.Exec(context.Background(), `
		DO $$ DECLARE i text; BEGIN
		  FOR i IN SELECT c.relname FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid JOIN pg_am a ON a.oid = c.relam
		           WHERE (x.indrelid = 'chunks'::regclass
		                  OR x.indrelid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = 'chunks'::regclass))
		             AND a.amname = 'hnsw' LOOP
		    EXECUTE format('DROP INDEX %I', i);
		  END LOOP;
		  -- Partitioned (KB_TABLE_LAYOUT), the definitions new partitions get theirs from.
		  DELETE FROM partition_indexes WHERE definition LIKE '% USING hnsw %';
		END $$`)
	if err != nil {
		t.Fatal(err)
	}
	return pool
}

func lowEfSearch(t testing.TB) *pgxpool.Pool {
	pool := dbtest.FreshPool(t)
	ctx := context.Background()
	var db string
	if err := pool.QueryRow(ctx, `SELECT current_database()`).Scan(&db); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `ALTER DATABASE "`+db+`" SET hnsw.ef_search = 10`); err != nil {
		t.Fatal(err)
	}
	pool.Reset() // new connections read the database's setting
	return pool
}
