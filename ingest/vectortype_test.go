package ingest_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/canonkb/canon/embed"
	"github.com/canonkb/canon/ingest"
	"github.com/canonkb/canon/markdown"
)

// halfvecIngester is newIngester on a database converted to halfvec storage.
func halfvecIngester(t *testing.T) (*ingest.Ingester, *pgxpool.Pool) {
	t.Helper()
	in, pool := newIngester(t)
	if changed, _, err := ingest.SetVectorType(context.Background(), pool, "halfvec", bulkEverything); err != nil || !changed {
		t.Fatalf("SetVectorType(halfvec) = %v, %v", changed, err)
	}
	return in, pool
}

// With halfvec storage the bulk path (COPY, index deferred and built from its
// recorded definition) stores what the row-by-row path does, indexes included;
// and both store exactly what converting a vector database gives: Go's
// float32 -> float16 conversion of the COPY rounds as pgvector's cast does.
func TestHalfvecIngestBulkAndIncremental(t *testing.T) {
	t.Parallel()
	handbook, err := ingest.ReadDirs([]string{"../examples/handbook"})
	if err != nil {
		t.Fatal(err)
	}
	change := append(slices.Clone(handbook[1:]), file("extra.md", "# Extra\n\nA late page about KB_RRF_K.\n"))

	rowByRow, rowPool := halfvecIngester(t)
	rowByRow.Workers = 1
	rowByRow.Bulk.MinChunks = 0
	bulk, bulkPool := halfvecIngester(t)
	bulk.Workers = 1
	bulk.Bulk = bulkEverything
	converted, convertedPool := newIngester(t)
	converted.Workers = 1
	converted.Bulk.MinChunks = 0

	want := run(t, rowByRow, "p", true, handbook...)
	wantIndexes := indexDefinitions(t, rowPool)
	// The table's indexes, or in the partitioned layout each partition's.
	for _, want := range []string{
		`^CREATE INDEX chunks(_p[0-9]+)?_embedding_hnsw ON public.chunks(_p[0-9]+)? USING hnsw \(embedding halfvec_cosine_ops\)$`,
		`^CREATE INDEX chunks(_p[0-9]+)?_rejected_hnsw ON public.chunks(_p[0-9]+)? USING hnsw \(embedding halfvec_cosine_ops\) WHERE represents_rejected$`,
	} {
		if !slices.ContainsFunc(wantIndexes, regexp.MustCompile(want).MatchString) {
			t.Errorf("halfvec database lacks %s; has\n%s", want, strings.Join(wantIndexes, "\n"))
		}
	}
	if slices.ContainsFunc(wantIndexes, func(def string) bool { return strings.Contains(def, "vector_cosine_ops") }) {
		t.Errorf("halfvec database has a vector index:\n%s", strings.Join(wantIndexes, "\n"))
	}
	got := run(t, bulk, "p", true, handbook...)
	run(t, converted, "p", true, handbook...)
	if got.Steps.IndexBuild <= 0 || want.Steps.IndexBuild != 0 || got.Chunks != want.Chunks {
		t.Errorf("bulk %+v, row by row %+v; want the same chunks, only the bulk load building", got, want)
	}
	compareDerived(t, "first load", derivedRows(t, rowPool), derivedRows(t, bulkPool))
	if got := indexDefinitions(t, bulkPool); !slices.Equal(got, wantIndexes) {
		t.Errorf("indexes after the bulk load:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantIndexes, "\n"))
	}
	checkStats(t, bulkPool)

	bulk.Bulk.Ratio = 1
	run(t, rowByRow, "p", true, change...)
	// Partitioned, the new page starts project p: a bulk load of its empty partition.
	newProject := layoutOf(t, bulkPool) == "partitioned"
	if res := run(t, bulk, "p", true, change...); (res.Steps.IndexBuild != 0) != newProject || res.Updated+res.Created == 0 {
		t.Errorf("the change: %+v; want it stored row by row", res)
	}
	run(t, converted, "p", true, change...)
	compareDerived(t, "change", derivedRows(t, rowPool), derivedRows(t, bulkPool))

	if changed, _, err := ingest.SetVectorType(context.Background(), convertedPool, "halfvec", bulkEverything); err != nil || !changed {
		t.Fatalf("convert: %v, %v", changed, err)
	}
	compareDerived(t, "converted vector database", derivedRows(t, rowPool), derivedRows(t, convertedPool))
	// The change stored extra.md in project p, which the handbook's files (all
	// naming their own projects) left uncreated: partitioned, p has partitions now.
	if got, want := indexDefinitions(t, convertedPool), indexDefinitions(t, rowPool); !slices.Equal(got, want) {
		t.Errorf("indexes after converting:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if s := scalar[string](t, convertedPool, `SELECT attstorage::text FROM pg_attribute
		WHERE attrelid = 'chunks'::regclass AND attname = 'embedding'`); s != "p" {
		t.Errorf("chunks.embedding storage %q after converting; want p (plain, as migration 00001 sets it)", s)
	}
}

// Converting while a dead bulk load left the vector index deferred rewrites
// its recorded definition, so the index it builds later takes the new type;
// a live bulk load makes the conversion refuse.
func TestVectorTypeConversionAndDeferredIndexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	in, pool := newIngester(t)
	run(t, in, "p", false, file("a.md", "# A\n\nAlpha.\n"))
	index := vectorIndex(t, pool, "p")
	for _, sql := range []string{
		`INSERT INTO deferred_indexes (name, definition) SELECT '` + index + `', pg_get_indexdef('` + index + `'::regclass)`,
		`DROP INDEX ` + index,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}

	live, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := live.Exec(ctx, "SELECT pg_advisory_lock(hashtextextended('canon.bulk', 0))"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ingest.SetVectorType(ctx, pool, "halfvec", bulkEverything); !errors.Is(err, ingest.ErrBulkLoadRunning) {
		t.Errorf("converting during a bulk load: %v; want ErrBulkLoadRunning", err)
	}
	if _, err := live.Exec(ctx, "SELECT pg_advisory_unlock(hashtextextended('canon.bulk', 0))"); err != nil {
		t.Fatal(err)
	}
	live.Release()

	if changed, _, err := ingest.SetVectorType(ctx, pool, "halfvec", bulkEverything); err != nil || !changed {
		t.Fatalf("SetVectorType(halfvec) = %v, %v", changed, err)
	}
	if def := scalar[string](t, pool, "SELECT definition FROM deferred_indexes WHERE name = $1", index); !strings.Contains(def, "(embedding halfvec_cosine_ops)") {
		t.Errorf("deferred definition after converting: %s", def)
	}
	built, err := ingest.RestoreDeferredIndexes(ctx, pool, bulkEverything)
	if err != nil || len(built) != 1 {
		t.Fatalf("restore: %v, %v", built, err)
	}
	if def := scalar[string](t, pool, "SELECT pg_get_indexdef($1::regclass)", index); !strings.Contains(def, "halfvec_cosine_ops") {
		t.Errorf("index built after converting: %s", def)
	}
	if changed, _, err := ingest.SetVectorType(ctx, pool, "halfvec", bulkEverything); err != nil || changed {
		t.Errorf("converting to the type it has: %v, %v; want no change", changed, err)
	}
	if _, _, err := ingest.SetVectorType(ctx, pool, "float8", bulkEverything); err == nil || !strings.Contains(err.Error(), "KB_VECTOR_TYPE must be vector or halfvec") {
		t.Errorf("SetVectorType(float8): %v", err)
	}
}

// reembed over halfvec storage: the new vectors go through the same UPDATE
// (vector[] assigned to the halfvec column) and every chunk's is the new
// embedder's; halfvec values scan into pgvector.Vector.
func TestReembedOverHalfvec(t *testing.T) {
	t.Parallel()
	hashIn, pool := halfvecIngester(t)
	run(t, hashIn, "re", false, reembedCorpus()...)
	before := vectors(t, pool)

	srv := httptest.NewServer(&negatedHash{hash: embed.NewHash(384)})
	t.Cleanup(srv.Close)
	openai, err := embed.NewOpenAI(embed.OpenAIConfig{BaseURL: srv.URL + "/v1", Model: "negated-hash", Dim: 384, BatchSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	in := ingest.New(pool, openai, markdown.Options{ChunkTokens: 512, OverlapTokens: 64})
	if res, err := in.Reembed(context.Background(), "re", nil); err != nil || res.Remaining != 0 || res.Documents == 0 {
		t.Fatalf("reembed: %+v, %v", res, err)
	}
	after := vectors(t, pool)
	if len(after) != len(before) || len(before) < 600 {
		t.Fatalf("%d vectors before, %d after", len(before), len(after))
	}
	for key, old := range before {
		// Negating a float16 is exact.
		for k := range old {
			if after[key][k] != -old[k] {
				t.Fatalf("%s: vector is not the new embedder's for the same text", key)
			}
		}
	}
}
