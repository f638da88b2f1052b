package bench_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/canonkb/canon/bench"
	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/embed"
	"github.com/canonkb/canon/hierarchy"
	"github.com/canonkb/canon/ingest"
	"github.com/canonkb/canon/internal/dbtest"
	"github.com/canonkb/canon/markdown"
	"github.com/canonkb/canon/search"
)

// TestLatencyEntityMethods times pass 1 alone and the two-pass search on
// questions naming the synthetic corpus's people: every question is answered in
// two passes (an answer that is not counts as an error), and pass 1's target is
// reported.
func TestLatencyEntityMethods(t *testing.T) {
	pool := dbtest.FreshPool(t)
	ctx := context.Background()
	emb := embed.NewHash(384)
	chunking := markdown.Options{ChunkTokens: 512, OverlapTokens: 64}
	ranking := domain.DefaultRanking(domain.ProfileHashKeywordLed)
	words, err := bench.HandbookVocabulary("../examples/handbook")
	if err != nil {
		t.Fatal(err)
	}
	flat := search.New(pool, emb, search.Config{Ranking: ranking, Profile: domain.ProfileHashKeywordLed, Graph: search.DefaultGraphConfig()})
	setup := bench.LatencySetup{
		Pool: pool, Ingester: ingest.New(pool, emb, chunking), Embedder: emb, Chunking: chunking, Ranking: ranking,
		Searcher: flat, Hierarchy: hierarchy.New(pool, flat, hierarchy.DefaultConfig()),
	}
	rep, err := bench.Latency(ctx, setup, bench.LatencyOptions{
		Chunks: 600, Seed: 3, Vocabulary: words, Concurrency: []int{1, 2}, Duration: 100 * time.Millisecond,
		MaxRequests: 12, Queries: 20, SkipIndexBuild: true,
		Methods: []string{bench.MethodPass1, bench.MethodTwoPass, bench.MethodFlat},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Methods) != 3 || len(rep.Cells) != 6 {
		t.Fatalf("%d methods, %d cells: %v", len(rep.Methods), len(rep.Cells), rep.Methods)
	}
	for _, c := range rep.Cells {
		if c.Requests == 0 || c.Errors > 0 || c.P50Ms <= 0 {
			t.Errorf("%s at %d: %+v", c.Method, c.Concurrency, c)
		}
		// Each question names one person: pass 1 chooses one entity.
		if c.Method == bench.MethodPass1 && c.AvgRows != 1 {
			t.Errorf("pass 1 chose %.2f entities per question, want 1", c.AvgRows)
		}
	}
	targets := 0
	for _, tg := range rep.Targets {
		if strings.HasPrefix(tg.Name, bench.MethodPass1+" p50 < 10 ms") {
			targets++
		}
	}
	if targets != 2 {
		t.Errorf("pass-1 targets: %+v", rep.Targets)
	}

	var projectID int64
	if err := pool.QueryRow(ctx, "SELECT id FROM projects WHERE project_key = $1", rep.Project).Scan(&projectID); err != nil {
		t.Fatal(err)
	}
	qs, err := bench.EntityQuestions(ctx, pool, projectID, 100)
	if err != nil || len(qs) == 0 || len(qs)%3 != 0 || !strings.HasPrefix(qs[0], "what has ") {
		t.Fatalf("entity questions %v, %v", qs, err)
	}
	again, _ := bench.EntityQuestions(ctx, pool, projectID, 100)
	if strings.Join(again, "|") != strings.Join(qs, "|") {
		t.Error("entity questions are not deterministic")
	}
}
