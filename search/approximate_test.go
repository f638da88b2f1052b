package search_test

import (
	"math"
	"slices"
	"testing"

	"github.com/canonkb/canon/domain"
	canonv1 "github.com/canonkb/canon/gen/canon/v1"
)

// The approximate keyword leg only chooses candidates: every score it returns is
// the exact BM25 of that chunk, and with a limit no term reaches it ranks
// exactly like exact mode.
func TestApproximateKeywordLegScoresExactly(t *testing.T) {
	s := handbook(t)
	limit := func(n int32) func(*canonv1.SearchRequest) {
		return func(r *canonv1.SearchRequest) {
			r.Options.Fusion = domain.FusionKeywordOnly
			r.Options.Limit = 20
			r.Options.Explain = true
			r.Options.Ranking = &canonv1.Ranking{Bm25TermLimit: &n}
		}
	}
	for _, q := range []string{
		"what cache layer did we standardise on?",
		"how do deployment rollbacks work?",
		"error E5032 in the payment worker",
		"which service handles email and push notifications and the session store",
	} {
		exact := mustSearch(t, s, req(q, limit(0)))
		if m := exact.GetMeta().GetSearchStrategy().GetKeywordMode(); m != "exact" {
			t.Fatalf("%q: keyword_mode %q, want exact", q, m)
		}
		exactBM25 := map[int64]float64{}
		for _, h := range append(exact.GetPrimary(), exact.GetRunnerUp()...) {
			exactBM25[h.GetChunkId()] = h.GetExplain().GetKeywordBm25()
		}

		// A limit of 2 postings per term is far below the handbook's lists:
		// the candidates differ, their scores may not.
		approx := mustSearch(t, s, req(q, limit(2)))
		if m := approx.GetMeta().GetSearchStrategy().GetKeywordMode(); m != "approximate:2" {
			t.Fatalf("%q: keyword_mode %q, want approximate:2", q, m)
		}
		shared := 0
		for _, h := range approx.GetPrimary() {
			want, ok := exactBM25[h.GetChunkId()]
			if !ok {
				continue
			}
			shared++
			if got := h.GetExplain().GetKeywordBm25(); math.Abs(got-want) > 1e-9 {
				t.Errorf("%q: chunk %d scored %.6f approximately, %.6f exactly", q, h.GetChunkId(), got, want)
			}
		}
		if shared == 0 {
			t.Errorf("%q: approximate and exact pages share no chunk", q)
		}

		// Far above every list: the same ranking as exact mode.
		wide := mustSearch(t, s, req(q, limit(domain.MaxBM25TermLimit)))
		if got, want := chunkIDs(wide), chunkIDs(exact); !slices.Equal(got, want) {
			t.Errorf("%q: a limit above every postings list ranks %v, exact %v", q, got, want)
		}
	}

	// Filters force exact ranges, so a selective filter cannot empty the leg.
	filtered := mustSearch(t, s, req("cache layer", limit(2), func(r *canonv1.SearchRequest) {
		r.Filters.Statuses = []string{"superseded"}
	}))
	if m := filtered.GetMeta().GetSearchStrategy().GetKeywordMode(); m != "exact" {
		t.Errorf("filtered request: keyword_mode %q, want exact", m)
	}
	if len(filtered.GetPrimary()) == 0 {
		t.Error("filtered request found nothing")
	}
}
