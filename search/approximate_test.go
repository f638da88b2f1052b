package search_test

import (
	"math"
	"slices"
	"testing"

	"github.com/canonkb/canon/domain"
)

// The approximate keyword leg only chooses candidates: every score it returns is
// the exact BM25 of that chunk, and with a limit no term reaches it ranks
// exactly like exact mode.
func TestApproximateKeywordLegScoresExactly(t *testing.T) {
	t.Parallel()
	s := handbook(t)
	limit := func(n int32) func(*domain.SearchRequest) {
		return func(r *domain.SearchRequest) {
			r.Options.Fusion = domain.FusionKeywordOnly
			r.Options.Limit = 4
			r.Options.Explain = true
			r.Options.Ranking = domain.RankingOverride{"bm25_term_limit": float64(n)}
		}
	}
	for _, q := range []string{
		"what cache layer did we standardise on?",
		"how do deployment rollbacks work?",
		"error E5032 in the payment worker",
		"which service handles email and push notifications and the session store",
		// More than 63 distinct terms: the ones past keyword_scored's mask are
		// always probed, never counted twice.
		longQuestion,
	} {
		exact := mustSearch(t, s, req(q, limit(0)))
		if m := exact.Meta.SearchStrategy.KeywordMode; m != "exact" {
			t.Fatalf("%q: keyword_mode %q, want exact", q, m)
		}
		exactBM25, exactCoverage := map[int64]float64{}, map[int64]float64{}
		for _, h := range append(exact.Primary, exact.RunnerUp...) {
			exactBM25[h.ChunkID] = h.Explain.KeywordBM25
			exactCoverage[h.ChunkID] = h.KeywordCoverage
		}

		// A limit of 2 postings per term is raised to the fanout (the default
		// page's 8 hits, as a smaller page reads, × the candidate multiplier 3),
		// still far below the handbook's lists: the candidates differ, their
		// scores may not.
		approx := mustSearch(t, s, req(q, limit(2)))
		if m := approx.Meta.SearchStrategy.KeywordMode; m != "approximate:24" {
			t.Fatalf("%q: keyword_mode %q, want approximate:24 (the fanout)", q, m)
		}
		shared := 0
		for _, h := range approx.Primary {
			want, ok := exactBM25[h.ChunkID]
			if !ok {
				continue
			}
			shared++
			if got := h.Explain.KeywordBM25; math.Abs(got-want) > 1e-9 {
				t.Errorf("%.40q: chunk %d scored %.6f approximately, %.6f exactly", q, h.ChunkID, got, want)
			}
			if got, want := h.KeywordCoverage, exactCoverage[h.ChunkID]; math.Abs(got-want) > 1e-9 {
				t.Errorf("%.40q: chunk %d keyword coverage %.4f approximately, %.4f exactly", q, h.ChunkID, got, want)
			}
		}
		if shared == 0 {
			t.Errorf("%.40q: approximate and exact pages share no chunk", q)
		}

		// Far above every list: the same ranking as exact mode.
		wide := mustSearch(t, s, req(q, limit(domain.MaxBM25TermLimit)))
		if got, want := chunkIDs(wide), chunkIDs(exact); !slices.Equal(got, want) {
			t.Errorf("%.40q: a limit above every postings list ranks %v, exact %v", q, got, want)
		}
	}

	// Filters force exact ranges, so a selective filter cannot empty the leg.
	filtered := mustSearch(t, s, req("cache layer", limit(2), func(r *domain.SearchRequest) {
		r.Filters.Statuses = []string{"superseded"}
	}))
	if m := filtered.Meta.SearchStrategy.KeywordMode; m != "exact" {
		t.Errorf("filtered request: keyword_mode %q, want exact", m)
	}
	if len(filtered.Primary) == 0 {
		t.Error("filtered request found nothing")
	}
}

// longQuestion has more distinct terms than keyword_scored's 63-bit mask.
const longQuestion = "cache layer redis cluster replication lag ledger migration postgres runbook deploy canary " +
	"rollback incident tenant shard queue kafka consumer offset latency budget error retry backoff session " +
	"store notification email push payment worker standard logging logfmt decision accepted superseded " +
	"deprecated archived memcached graphql gateway federation apollo platform team dana lee project atlas " +
	"module service database access pool connection timeout alert pager oncall escalation dashboard metric " +
	"trace span sampling budget quota rate limit throttle circuit breaker bulkhead idempotency key schema " +
	"index vacuum partition"

// The approximate leg reads at least the fanout per term, so a one-term question
// fills the page it asks for however low the term limit is set.
func TestApproximateKeywordLegFillsThePage(t *testing.T) {
	t.Parallel()
	s := handbook(t)
	search := func(termLimit int32) *domain.SearchResult {
		return mustSearch(t, s, req("cache", func(r *domain.SearchRequest) {
			r.Options.Fusion = domain.FusionKeywordOnly
			r.Options.Limit = 10
			r.Options.Ranking = domain.RankingOverride{"bm25_term_limit": float64(termLimit)}
		}))
	}
	primary := func(r *domain.SearchResult) (ids []int64) {
		for _, h := range r.Primary {
			ids = append(ids, h.ChunkID)
		}
		return ids
	}
	exact, approx := search(0), search(1)
	if len(exact.Primary) < 10 {
		t.Fatalf("exact mode found %d chunks with \"cache\", the test needs 10", len(exact.Primary))
	}
	if m := approx.Meta.SearchStrategy.KeywordMode; m != "approximate:30" {
		t.Errorf("keyword_mode %q, want approximate:30 (the fanout)", m)
	}
	// Runners-up may differ: past the page, which chunks the leg read decides
	// what the per-document cap leaves.
	if got, want := primary(approx), primary(exact); !slices.Equal(got, want) {
		t.Errorf("term limit 1 ranks %v, exact %v", got, want)
	}
}
