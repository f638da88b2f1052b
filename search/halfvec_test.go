package search_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/embed"
	"github.com/canonkb/canon/ingest"
	"github.com/canonkb/canon/internal/dbtest"
	"github.com/canonkb/canon/markdown"
	"github.com/canonkb/canon/search"
)

// The same ranking statement over halfvec storage (KB_VECTOR_TYPE=halfvec)
// ranks the golden questions as over vector: the same first document and
// nearly the same scores under every fusion; keyword_only, which reads no
// embedding, exactly the same hits and scores (in the same order but among
// equal scores, which chunk ids order).
func TestHalfvecRanksAsVector(t *testing.T) {
	t.Parallel()
	vector := handbook(t)
	ctx := context.Background()
	half := dbtest.FreshPool(t)
	if changed, _, err := ingest.SetVectorType(ctx, half, "halfvec", ingest.DefaultBulkPolicy()); err != nil || !changed {
		t.Fatalf("SetVectorType(halfvec) = %v, %v", changed, err)
	}
	files, err := ingest.ReadDirs([]string{"../examples/handbook"})
	if err != nil {
		t.Fatal(err)
	}
	in := ingest.New(half, embed.NewHash(dim), markdown.Options{ChunkTokens: 512, OverlapTokens: 64})
	if res, err := in.Ingest(ctx, files, ingest.Options{Project: "platform"}); err != nil || len(res.Errors) > 0 {
		t.Fatalf("ingest: %v %v", err, res.Errors)
	}
	halfvec := search.New(half, embed.NewHash(dim), search.Config{
		Ranking: domain.DefaultRanking(domain.ProfileHashKeywordLed), Profile: domain.ProfileHashKeywordLed})
	halfvec.Today = func() time.Time { return time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC) }

	// The graph step over halfvec: its rejected approaches come through
	// chunks_rejected_hnsw, built with halfvec_cosine_ops.
	graphVector, graphHalf := graphSearcher(pool, search.DefaultGraphConfig()), graphSearcher(half, search.DefaultGraphConfig())
	for _, q := range []string{"why did we reject memcached?", "what cache layer did we standardise on?"} {
		a, b := mustSearch(t, graphVector, req(q)), mustSearch(t, graphHalf, req(q))
		for _, list := range []struct {
			name string
			a, b []*domain.Hit
		}{{"expanded", a.Expanded, b.Expanded}, {"rejected", a.Rejected, b.Rejected}} {
			if x, y := docIDs(list.a), docIDs(list.b); strings.Join(x, " ") != strings.Join(y, " ") {
				t.Errorf("%q: %s over vector %v, over halfvec %v", q, list.name, x, y)
			}
		}
		if rankOf(b.Rejected, "rej-memcached-2023") < 0 && q == "why did we reject memcached?" {
			t.Errorf("%q over halfvec: no rejected approach rej-memcached-2023: %v", q, docIDs(b.Rejected))
		}
	}

	// A float16 keeps 11 significant bits: a cosine moves by about 1e-3.
	const scoreTolerance = 0.01
	for _, q := range goldenQueries {
		for _, fusion := range domain.Fusions() {
			r := req(q, func(r *domain.SearchRequest) { r.Options.Fusion = fusion })
			a, b := mustSearch(t, vector, r), mustSearch(t, halfvec, r)
			name := fmt.Sprintf("%q [%s]", q, fusion)
			if len(a.Primary) == 0 || len(a.Primary) != len(b.Primary) {
				t.Errorf("%s: %d hits over vector, %d over halfvec", name, len(a.Primary), len(b.Primary))
				continue
			}
			if fusion == domain.FusionKeywordOnly {
				if x, y := placed(a), placed(b); x != y {
					t.Errorf("%s: keyword_only differs\nvector\n%s\nhalfvec\n%s", name, x, y)
				}
				continue
			}
			if a.Primary[0].DocID != b.Primary[0].DocID {
				t.Errorf("%s: first document %s over vector, %s over halfvec", name, a.Primary[0].DocID, b.Primary[0].DocID)
			}
			for i := range a.Primary {
				if d := math.Abs(a.Primary[i].Score - b.Primary[i].Score); d > scoreTolerance {
					t.Errorf("%s: hit %d scores %.4f over vector, %.4f over halfvec", name, i+1, a.Primary[i].Score, b.Primary[i].Score)
				}
			}
		}
	}
}

// placed lists a result's hits by document, heading path and exact score,
// sorted: chunk ids differ between databases, and they break ties.
func placed(r *domain.SearchResult) string {
	var lines []string
	for _, h := range append(slices.Clone(r.Primary), r.RunnerUp...) {
		lines = append(lines, fmt.Sprintf("%.9f %s %s", h.Score, h.DocID, strings.Join(h.HeadingPath, " > ")))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
