package search

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/canonkb/canon/gen/db"
	"github.com/canonkb/canon/internal/dbtest"
	"github.com/canonkb/canon/internal/sqlcapture"
)

// canon_document_matches (migration 00013) is a SQL function so the filter is
// written once; it must be inlined, or every filtered leg would call it per row
// and lose the index conditions the predicate gives the planner. The generic
// plan, the one the cached statements reuse, shows the expanded predicate.
func TestDocumentFilterIsInlined(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	vec := make([]float32, 384)
	vec[0] = 1
	q := pgvector.NewVector(vec)
	day := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	strs := []string{"x"}
	capture := func(run func(db.DBTX) error) sqlcapture.Statement {
		var st sqlcapture.Statement
		if err := run(&st); !errors.Is(err, sqlcapture.ErrCaptured) {
			t.Fatalf("capture: %v", err)
		}
		return st
	}
	statements := map[string]sqlcapture.Statement{
		"SearchRank": capture(func(tx db.DBTX) error {
			_, err := db.New(tx).SearchRank(ctx, db.SearchRankParams{
				Query: "cache layer", Languages: []string{"en"}, Configs: []string{"english"}, Tags: strs,
				ProjectIds: []int64{1}, FtsEnabled: true, QueryEmbedding: &q,
				SemanticEnabled: true, Filtered: true, Fanout: 24, SourceTypes: strs, CanonicalTypes: strs,
				Statuses: strs, EvidenceTiers: strs, DateFrom: &day, DateTo: &day, DocIds: strs, Bm25K1: 1.2,
				Bm25B: 0.75, Bm25HeadingBoost: 2, Mentioned: strs, Today: day, RecencyHalfLifeDays: 180,
				EvidenceTrust: []float64{1}, EvidenceTierNames: strs, Fusion: "weighted", RrfK: 60,
				MaxChunksPerDoc: 3, PageLimit: 8, RunnerUpLimit: 8,
			})
			return err
		}),
		"GraphSearch": capture(func(tx db.DBTX) error {
			_, err := db.New(tx).GraphSearch(ctx, db.GraphSearchParams{
				PrimaryDocumentIds: []int64{1}, ProjectIds: []int64{1}, RelevantDocumentIds: []int64{1},
				HubTypes: strs, ExpansionEnabled: true, EdgeTypes: strs, RejectedEnabled: true, Tags: strs,
				SourceTypes: strs, CanonicalTypes: strs, Statuses: strs, EvidenceTiers: strs, DateFrom: &day,
				DateTo: &day, DocIds: strs, QueryEmbedding: &q, RejectedMaxDocs: 3, MaxPerSeed: 5, MaxNodes: 20,
			})
			return err
		}),
	}
	conn, err := dbtest.Pool(t).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SET plan_cache_mode = force_generic_plan"); err != nil {
		t.Fatal(err)
	}
	for name, st := range statements {
		if _, err := conn.Exec(ctx, "PREPARE "+name+" AS "+st.SQL); err != nil {
			t.Fatalf("%s: prepare: %v", name, err)
		}
		args := make([]string, len(st.Args))
		for i, a := range st.Args {
			if args[i], err = literal(a); err != nil {
				t.Fatal(err)
			}
		}
		rows, err := conn.Query(ctx, "EXPLAIN (VERBOSE) EXECUTE "+name+"("+strings.Join(args, ", ")+")")
		if err != nil {
			t.Fatalf("%s: explain: %v", name, err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		plan := strings.Join(lines, "\n")
		if strings.Contains(plan, "canon_document_matches") || !strings.Contains(plan, ".tags && $") {
			t.Errorf("%s: the document filter is not inlined in the generic plan:\n%s", name, plan)
		}
	}
}
