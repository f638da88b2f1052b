package bench_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/canonkb/canon/bench"
	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/embed"
	"github.com/canonkb/canon/ingest"
	"github.com/canonkb/canon/internal/dbtest"
	"github.com/canonkb/canon/markdown"
	"github.com/canonkb/canon/postgres"
	"github.com/canonkb/canon/search"
)

// The chunks' GIN and HNSW indexes: the table's, or (KB_TABLE_LAYOUT=partitioned) a partition's.
var (
	tsvIndex  = regexp.MustCompile(`^chunks(_p[0-9]+)?_tsv_gin$`)
	hnswIndex = regexp.MustCompile(`^chunks(_p[0-9]+)?_embedding_hnsw$`)
)

// TestLatencySmall runs the whole latency bench on a tiny corpus: every method
// answers without errors, EXPLAIN works on every statement, the report is written,
// and a second run reuses the loaded corpus.
func TestLatencySmall(t *testing.T) {
	pool := dbtest.FreshPool(t)
	ctx := context.Background()
	emb := embed.NewHash(384)
	chunking := markdown.Options{ChunkTokens: 512, OverlapTokens: 64}
	ranking := domain.DefaultRanking(domain.ProfileHashKeywordLed)
	words, err := bench.HandbookVocabulary("../examples/handbook")
	if err != nil {
		t.Fatal(err)
	}
	setup := bench.LatencySetup{
		Pool: pool, Ingester: ingest.New(pool, emb, chunking), Embedder: emb, Chunking: chunking, Ranking: ranking,
		Searcher: search.New(pool, emb, search.Config{Ranking: ranking, Profile: domain.ProfileHashKeywordLed, Graph: search.DefaultGraphConfig()}),
	}
	opts := bench.LatencyOptions{
		Chunks: 150, Seed: 3, Vocabulary: words, Concurrency: []int{1, 2}, Duration: 100 * time.Millisecond,
		MaxRequests: 15, Queries: 20,
	}
	rep, err := bench.Latency(ctx, setup, opts)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Load.Chunks != 150 || !rep.Load.Loaded || rep.Load.IngestChunksPerS <= 0 || rep.Load.HNSWBuildS <= 0 {
		t.Errorf("load: %+v", rep.Load)
	}
	// The corpus is English as a whole: no document of it is left to detection.
	var languages []string
	if err := pool.QueryRow(ctx, `SELECT array_agg(DISTINCT language ORDER BY language) FROM chunks`).Scan(&languages); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(languages, []string{bench.SynthLanguage}) {
		t.Errorf("the synthetic corpus's chunks are in %v, want [%s]", languages, bench.SynthLanguage)
	}
	if want := len(rep.Methods) * 2; len(rep.Cells) != want || len(rep.Methods) != 10 {
		t.Errorf("%d methods, %d cells", len(rep.Methods), len(rep.Cells))
	}
	for _, c := range rep.Cells {
		if c.Requests == 0 || c.Errors > 0 || c.P50Ms <= 0 || c.AvgRows == 0 {
			t.Errorf("%s at %d: %+v", c.Method, c.Concurrency, c)
		}
	}
	// The interleaved pairs: both methods answered every question of each pair.
	for _, tc := range []struct {
		p    *bench.LatencyPair
		a, b string
	}{{rep.Paired, "canon/weighted", "ref/hnsw"}, {rep.PairedServed, "canon/weighted+graph", "ref/hnsw"}} {
		if p := tc.p; p == nil || p.Pairs == 0 || p.A.Requests != p.Pairs || p.B.Requests != p.Pairs ||
			p.A.Errors+p.B.Errors > 0 || p.A.Method != tc.a || p.B.Method != tc.b || p.MedianRatio <= 0 {
			t.Errorf("paired measurement of %s and %s: %+v", tc.a, tc.b, tc.p)
		}
	}
	for _, e := range rep.Explain {
		if e.Error != "" || e.Runs == 0 || e.ExecMs <= 0 {
			t.Errorf("explain %s: %+v", e.Statement, e)
		}
		if strings.HasPrefix(e.Statement, "peer/pgvector") && !slices.ContainsFunc(e.Indexes, tsvIndex.MatchString) {
			t.Errorf("the pgvector example's keyword leg should use the GIN index: %v", e.Indexes)
		}
	}
	dir := t.TempDir()
	paths, err := rep.WriteFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "latency.md"))
	if err != nil || len(paths) != 2 {
		t.Fatalf("%v %v", paths, err)
	}
	for _, want := range []string{"| canon/weighted | 1 |", "| peer/supabase | 2 |", "chunks/s", "## Targets", "Interleaved", "(interleaved, concurrency 1)",
		"canon/weighted p50 <= 1.5x ref/hnsw p50 (interleaved", "canon/weighted+graph p50 <= 2x ref/hnsw p50 (concurrency 1)",
		"canon/weighted+graph p50 <= 2x ref/hnsw p50 (interleaved", "of canon/weighted+graph's time / ref/hnsw's"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("latency.md lacks %q", want)
		}
	}

	opts.SkipIndexBuild, opts.Methods = true, []string{"ref/hnsw"}
	again, err := bench.Latency(ctx, setup, opts)
	if err != nil {
		t.Fatal(err)
	}
	if again.Load.Loaded || again.Load.HNSWBuildS != 0 || len(again.Cells) != 2 {
		t.Errorf("second run: loaded %v, build %v, %d cells", again.Load.Loaded, again.Load.HNSWBuildS, len(again.Cells))
	}
}

func TestLatencyRefusesSharedDatabase(t *testing.T) {
	pool := dbtest.FreshPool(t)
	ctx := context.Background()
	emb := embed.NewHash(384)
	in := ingest.New(pool, emb, markdown.Options{})
	if _, err := in.Ingest(ctx, []ingest.File{{Path: "a.md", Content: []byte("# A\n\ntext\n")}}, ingest.Options{Project: "platform"}); err != nil {
		t.Fatal(err)
	}
	ranking := domain.DefaultRanking(domain.ProfileHashKeywordLed)
	_, err := bench.Latency(ctx, bench.LatencySetup{Pool: pool, Ingester: in, Embedder: emb, Ranking: ranking,
		Searcher: search.New(pool, emb, search.Config{Ranking: ranking})},
		bench.LatencyOptions{Chunks: 10, Vocabulary: []string{"a"}, Duration: time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "database of its own") {
		t.Fatalf("error %v, want a refusal to run in a database with other projects", err)
	}
}

// make bench-1m's path at 2,000 chunks: one bulk load measured with vector
// storage, converted in place to halfvec and measured again, each report under
// its own name with the sizes of both HNSW indexes, the build time and the
// memory of the process and of the backend that built the index.
func TestLatencyVectorThenHalfvec(t *testing.T) {
	pool := dbtest.FreshPool(t)
	ctx := context.Background()
	emb := embed.NewHash(384)
	chunking := markdown.Options{ChunkTokens: 512, OverlapTokens: 64}
	ranking := domain.DefaultRanking(domain.ProfileHashKeywordLed)
	words, err := bench.HandbookVocabulary("../examples/handbook")
	if err != nil {
		t.Fatal(err)
	}
	in := ingest.New(pool, emb, chunking)
	in.Bulk.MinChunks = 1000
	setup := bench.LatencySetup{
		Pool: pool, Ingester: in, Embedder: emb, Chunking: chunking, Ranking: ranking,
		Searcher: search.New(pool, emb, search.Config{Ranking: ranking, Profile: domain.ProfileHashKeywordLed, Graph: search.DefaultGraphConfig()}),
	}
	dir := t.TempDir()
	for _, run := range []struct{ vectorType, name string }{{"vector", "latency-1m"}, {"halfvec", "latency-1m-halfvec"}} {
		rep, err := bench.Latency(ctx, setup, bench.LatencyOptions{
			Chunks: 2000, Seed: 5, Vocabulary: words, Concurrency: []int{1}, Duration: 100 * time.Millisecond,
			MaxRequests: 10, Queries: 20, Methods: []string{"canon/weighted", "ref/hnsw"},
			VectorType: run.vectorType, ReportName: run.name,
		})
		if err != nil {
			t.Fatal(err)
		}
		l := rep.Load
		if l.Chunks != 2000 || l.VectorType != run.vectorType || l.HNSWBuildS <= 0 ||
			l.Sizes["chunks_embedding_hnsw"] == 0 || l.Sizes["chunks_rejected_hnsw"] == 0 || l.Sizes["database"] == 0 {
			t.Errorf("%s: load %+v", run.vectorType, l)
		}
		if first := run.vectorType == "vector"; l.Loaded != first || (l.VectorConvertS > 0) == first || (first && !l.Bulk) {
			t.Errorf("%s: loaded %v (bulk %v), converted in %.1f s; want the vector run to load in bulk, the halfvec run to convert",
				run.vectorType, l.Loaded, l.Bulk, l.VectorConvertS)
		}
		if !strings.Contains(l.HNSWIndex, run.vectorType+"_cosine_ops") {
			t.Errorf("%s: index %s", run.vectorType, l.HNSWIndex)
		}
		for _, e := range rep.Explain {
			if strings.HasPrefix(e.Statement, "canon/weighted") && !slices.ContainsFunc(e.Indexes, hnswIndex.MatchString) {
				t.Errorf("%s: %s does not use the HNSW index: %v", run.vectorType, e.Statement, e.Indexes)
			}
		}
		if rep.Memory.PeakRSSLoadMB <= 0 && runtime.GOOS == "linux" {
			t.Errorf("%s: no peak RSS: %+v", run.vectorType, rep.Memory)
		}
		if _, err := rep.WriteFiles(dir); err != nil {
			t.Fatal(err)
		}
		md, err := os.ReadFile(filepath.Join(dir, run.name+".md"))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"| chunks.embedding stored as | " + run.vectorType + " |", "size of chunks_rejected_hnsw", "| ref/hnsw | 1 |", "HNSW rebuild"} {
			if !strings.Contains(string(md), want) {
				t.Errorf("%s.md lacks %q", run.name, want)
			}
		}
	}
}

// The partitioning comparison at 1,200 chunks over three projects: measured in
// the single layout, converted in place to the partitioned one and measured
// again. The searches name one project. With exact vector scans (index scans
// off, so no HNSW) the two layouts return the same pages: the statement ranks
// alike in both; with HNSW the pages may differ where the approximate index
// does (one graph filtered to the project, or the project's own graph).
func TestLatencyProjectsInBothLayouts(t *testing.T) {
	url := dbtest.FreshURL(t)
	ctx := context.Background()
	pool, err := postgres.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	exactPool, err := postgres.Connect(ctx, url+"&options=-c%20enable_indexscan%3Doff")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(exactPool.Close)
	emb := embed.NewHash(384)
	chunking := markdown.Options{ChunkTokens: 512, OverlapTokens: 64}
	ranking := domain.DefaultRanking(domain.ProfileHashKeywordLed)
	words, err := bench.HandbookVocabulary("../examples/handbook")
	if err != nil {
		t.Fatal(err)
	}
	setup := bench.LatencySetup{
		Pool: pool, Ingester: ingest.New(pool, emb, chunking), Embedder: emb, Chunking: chunking, Ranking: ranking,
		Searcher: search.New(pool, emb, search.Config{Ranking: ranking, Profile: domain.ProfileHashKeywordLed, Graph: search.DefaultGraphConfig()}),
	}
	exact := search.New(exactPool, emb, search.Config{Ranking: ranking, Profile: domain.ProfileHashKeywordLed})
	dir := t.TempDir()
	var digests []string
	var recalls []float64
	pages := map[string][]string{}
	for i, layout := range []string{"single", "partitioned"} {
		rep, err := bench.Latency(ctx, setup, bench.LatencyOptions{
			Chunks: 1200, Projects: 3, Seed: 7, Vocabulary: words, Concurrency: []int{1}, Duration: 100 * time.Millisecond,
			MaxRequests: 10, Queries: 20, Methods: []string{"canon/weighted", "ref/hnsw"}, TableLayout: layout, ReportName: "latency-" + layout,
		})
		if err != nil {
			t.Fatal(err)
		}
		l := rep.Load
		if l.Projects != 3 || l.Chunks != 400 || l.TableLayout != layout || (i == 1 && l.TableConvertS <= 0) ||
			l.ResultDigest == "" || l.ExactRecall <= 0 || l.ExactRecall > 1 || l.Sizes["chunks_embedding_hnsw"] == 0 || l.HNSWBuildS <= 0 {
			t.Errorf("%s: load %+v", layout, l)
		}
		digests = append(digests, l.ResultDigest)
		recalls = append(recalls, l.ExactRecall)
		for i, w := range words[100:130] {
			opts := domain.SearchOptions{Limit: 8, Fusion: []string{domain.FusionWeighted, domain.FusionSemanticOnly}[i%2]}
			opts.GraphExpansion, opts.RejectedInjection = new(false), new(false)
			r, err := exact.Search(ctx, &domain.SearchRequest{Query: w + " " + words[i], Options: opts,
				Filters: domain.RawFilters{ProjectKeys: []string{rep.Project}}})
			if err != nil {
				t.Fatal(err)
			}
			page := opts.Fusion + ":"
			for _, h := range r.Primary {
				page += " " + strconv.FormatInt(h.ChunkID, 10)
			}
			pages[layout] = append(pages[layout], page)
		}
		for _, c := range rep.Cells {
			if c.Requests == 0 || c.Errors > 0 {
				t.Errorf("%s: %s: %+v", layout, c.Method, c)
			}
		}
		if _, err := rep.WriteFiles(dir); err != nil {
			t.Fatal(err)
		}
		md, err := os.ReadFile(filepath.Join(dir, "latency-"+layout+".md"))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"| chunks, postings and lexeme_stats laid out (KB_TABLE_LAYOUT) | " + layout + " |",
			"| projects in the database (the searches name the first) | 3 of 400 chunks each |", "digest of canon/weighted's pages",
			"against an exact search"} {
			if !strings.Contains(string(md), want) {
				t.Errorf("latency-%s.md lacks %q", layout, want)
			}
		}
	}
	if !slices.Equal(pages["single"], pages["partitioned"]) {
		t.Errorf("with exact scans the layouts rank differently:\nsingle      %v\npartitioned %v", pages["single"], pages["partitioned"])
	}
	t.Logf("digests of the pages with HNSW: single %s, partitioned %s; recall against exact %v", digests[0], digests[1], recalls)
}
