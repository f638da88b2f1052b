package search_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/embed"
	"github.com/canonkb/canon/ingest"
	"github.com/canonkb/canon/markdown"
	"github.com/canonkb/canon/search"
)

// The approximate keyword leg reads each term's first bm25_term_limit postings
// in impact order. Chunks of equal impact (the same tf and length) tie, and the
// ones it reads must not depend on where their postings sit on disk: an update,
// a restore or a reload of the same documents would otherwise change the
// candidates, and with them the ranking. Ties go to the lowest chunk id.
func TestApproximateKeywordLegBreaksImpactTiesByChunkID(t *testing.T) {
	handbook(t)
	ctx := context.Background()
	const project, term = "impact-ties", "zorblat"
	var files []ingest.File
	for i := range 4 {
		files = append(files, ingest.File{
			Path:    fmt.Sprintf("note-%d.md", i),
			Content: []byte(fmt.Sprintf("# Note %d\n\nThe zorblat gauge reads high.\n", i)),
		})
	}
	in := ingest.New(pool, embed.NewHash(dim), markdown.Options{ChunkTokens: 512, OverlapTokens: 64})
	if res, err := in.Ingest(ctx, files, ingest.Options{Project: project}); err != nil || len(res.Errors) > 0 {
		t.Fatalf("ingest: %v %v", err, res.Errors)
	}
	var tied []int64
	if err := pool.QueryRow(ctx, `
		SELECT array_agg(p.chunk_id ORDER BY p.chunk_id)
		FROM postings p JOIN projects pr ON pr.id = p.project_id
		WHERE pr.project_key = $1 AND p.lexeme = $2
		GROUP BY p.impact`, project, term).Scan(&tied); err != nil {
		t.Fatalf("the four notes should tie on %q's impact: %v", term, err)
	}
	if len(tied) != 4 {
		t.Fatalf("%d chunks tie on %q's impact, want 4", len(tied), term)
	}

	// One posting per term, one hit: the leg reads exactly one chunk.
	first := func() int64 {
		t.Helper()
		one, multiplier := int32(1), int32(1)
		// A default page of one hit: a smaller page than the default reads the default's fanout.
		s := search.New(pool, embed.NewHash(dim), search.Config{Ranking: domain.DefaultRanking(domain.ProfileHashKeywordLed),
			Profile: domain.ProfileHashKeywordLed, DefaultLimit: 1})
		res := mustSearch(t, s, &domain.SearchRequest{
			Query:   term,
			Filters: domain.RawFilters{ProjectKeys: []string{project}},
			Options: domain.SearchOptions{
				Fusion: domain.FusionKeywordOnly, Limit: 1, GraphExpansion: proto.Bool(false),
				Ranking: domain.RankingOverride{"bm25_term_limit": float64(one), "candidate_multiplier": float64(multiplier)},
			},
		})
		if m := res.Meta.SearchStrategy.KeywordMode; m != "approximate:1" {
			t.Fatalf("keyword_mode %q, want approximate:1", m)
		}
		if len(res.Primary) != 1 {
			t.Fatalf("%d hits, want 1", len(res.Primary))
		}
		return res.Primary[0].ChunkID
	}
	if got := first(); got != tied[0] {
		t.Fatalf("the leg read chunk %d of the tied %v, want the lowest id", got, tied)
	}

	// Rewrite the tied postings, lowest id last, so on disk they now sit in the
	// reverse order of their ids. Nothing they hold changes.
	for _, id := range slices.Backward(tied) {
		if _, err := pool.Exec(ctx, `
			WITH moved AS (DELETE FROM postings WHERE chunk_id = $1 AND lexeme = $2 RETURNING *)
			INSERT INTO postings SELECT * FROM moved`, id, term); err != nil {
			t.Fatal(err)
		}
	}
	if got := first(); got != tied[0] {
		t.Fatalf("after the postings moved on disk the leg read chunk %d of the tied %v, want the lowest id", got, tied)
	}
}
