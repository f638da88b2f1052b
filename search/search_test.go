package search_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/protobuf/proto"

	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/embed"
	"github.com/canonkb/canon/ingest"
	"github.com/canonkb/canon/internal/dbtest"
	"github.com/canonkb/canon/markdown"
	"github.com/canonkb/canon/postgres"
	"github.com/canonkb/canon/search"
)

var update = flag.Bool("update", false, "rewrite golden files")

const dim = 384

var (
	setupOnce sync.Once
	setupErr  error
	pool      *pgxpool.Pool
)

// handbook returns a Searcher over the example handbook, ingested once per test binary.
func handbook(t *testing.T) *search.Searcher { return handbookB(t) }

func handbookB(t testing.TB) *search.Searcher {
	t.Helper()
	url := dbtest.URL(t)
	setupOnce.Do(func() {
		ctx := context.Background()
		// Shared by every test of the binary; TestMain closes it.
		var err error
		pool, err = postgres.Connect(ctx, url)
		if err != nil {
			setupErr = err
			return
		}
		files, err := ingest.ReadDirs([]string{"../examples/handbook"})
		if err != nil {
			setupErr = err
			return
		}
		in := ingest.New(pool, embed.NewHash(dim), markdown.Options{ChunkTokens: 512, OverlapTokens: 64})
		res, err := in.Ingest(ctx, files, ingest.Options{Project: "platform"})
		if err != nil {
			setupErr = err
			return
		}
		if len(res.Errors) > 0 {
			setupErr = fmt.Errorf("handbook has invalid files: %v", res.Errors)
		}
	})
	if setupErr != nil {
		t.Fatal(setupErr)
	}
	return newSearcher(domain.DefaultRanking(domain.ProfileHashKeywordLed))
}

func newSearcher(r domain.Ranking) *search.Searcher {
	s := search.New(pool, embed.NewHash(dim), search.Config{Ranking: r, Profile: domain.ProfileHashKeywordLed})
	// Recency is relative to "today"; pin it so golden rankings do not age.
	s.Today = func() time.Time { return time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC) }
	return s
}

func req(q string, mutate ...func(*domain.SearchRequest)) *domain.SearchRequest {
	r := &domain.SearchRequest{
		Query:   q,
		Filters: domain.RawFilters{ProjectKeys: []string{"platform"}},
		Options: domain.SearchOptions{Limit: 5},
	}
	for _, m := range mutate {
		m(r)
	}
	return r
}

func docIDs(hits []*domain.Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.DocID)
	}
	return out
}

func rankOf(hits []*domain.Hit, doc string) int {
	for i, h := range hits {
		if h.DocID == doc {
			return i
		}
	}
	return -1
}

func mustSearch(t *testing.T, s *search.Searcher, r *domain.SearchRequest) *domain.SearchResult {
	t.Helper()
	res, err := s.Search(context.Background(), r)
	if err != nil {
		t.Fatalf("search %q: %v", r.Query, err)
	}
	return res
}

func TestWorkedExampleCacheStandard(t *testing.T) {
	t.Parallel()
	s := handbook(t)
	res := mustSearch(t, s, req("what cache layer did we standardise on?", func(r *domain.SearchRequest) {
		r.Options.Explain = true
		r.Options.Limit = 20
	}))
	all := append(slices.Clone(res.Primary), res.RunnerUp...)
	v2, v1 := rankOf(all, "dec-cache-v2"), rankOf(all, "dec-cache-v1")
	if v2 != 0 {
		t.Errorf("dec-cache-v2 should rank first; got %v", docIDs(all))
	}
	if v1 < 0 {
		t.Fatalf("superseded dec-cache-v1 must stay retrievable; got %v", docIDs(all))
	}
	if v1 < v2 {
		t.Errorf("dec-cache-v1 (superseded) ranked above dec-cache-v2: %v", docIDs(all))
	}
	h := all[v1]
	if h.Status != "superseded" || h.Explain.StatusPenalty != 0.40 {
		t.Errorf("dec-cache-v1 explain should show the 0.40 superseded penalty, got status %q penalty %v",
			h.Status, h.Explain.StatusPenalty)
	}
	// Blog notes about caches must not outrank the accepted standard.
	for _, note := range []string{"note-cache-musings", "note-cache-benchmarks"} {
		if r := rankOf(all, note); r >= 0 && r < v2 {
			t.Errorf("%s ranked above dec-cache-v2", note)
		}
	}
}

func TestExplainContributionsAddUpToScore(t *testing.T) {
	t.Parallel()
	s := handbook(t)
	for _, fusion := range domain.Fusions() {
		t.Run(fusion, func(t *testing.T) {
			res := mustSearch(t, s, req("how do deployment rollbacks work?", func(r *domain.SearchRequest) {
				r.Options.Fusion = fusion
				r.Options.Explain = true
			}))
			if len(res.Primary) == 0 {
				t.Fatal("no results")
			}
			for _, h := range append(res.Primary, res.RunnerUp...) {
				sum := 0.0
				for _, c := range h.Explain.Contributions {
					sum += c.Contribution
				}
				if math.Abs(sum-h.Score) > 1e-9 {
					t.Errorf("%s: contributions add to %v, score is %v", h.DocID, sum, h.Score)
				}
				if math.IsNaN(h.Score) || math.IsInf(h.Score, 0) {
					t.Errorf("%s: score %v is not finite", h.DocID, h.Score)
				}
			}
			if got := res.Meta.SearchStrategy.FusionMethod; got != domain.FusionMethodName(fusion) {
				t.Errorf("fusion_method = %q", got)
			}
		})
	}
}

// The trust gradient under both fusions: heavy penalties (superseded, deprecated,
// archived) sink a document below current ones close to it, small ones (auto tier)
// only break near-ties, and a penalised document that is the only answer stays on
// the page with its status.
func TestTrustGradientUnderBothFusions(t *testing.T) {
	t.Parallel()
	s := handbook(t)
	cases := []struct {
		name, query string
		top         map[string]int // doc -> within the first k documents
		above       [][2]string    // a ranks above b (or b is not ranked)
	}{
		{"accepted over superseded and blog", "what cache layer did we standardise on?",
			map[string]int{"dec-cache-v2": 1},
			[][2]string{{"dec-cache-v2", "dec-cache-v1"}, {"dec-cache-v2", "note-cache-musings"}, {"dec-cache-v2", "note-cache-benchmarks"}}},
		{"superseded against its own words", "how do blue/green deployments switch traffic?",
			map[string]int{"dec-deploy-v2": 1, "dec-deploy-v1": 3}, [][2]string{{"dec-deploy-v2", "dec-deploy-v1"}}},
		{"auto tier and search_hint as the only answer", "how are email and push notifications delivered?",
			map[string]int{"mod-notification-service": 1}, nil},
		{"deprecated as the only answer", "what is the logging standard for Go services?",
			map[string]int{"std-logging-logfmt": 3}, nil},
		{"deprecated below current standards", "which standards must Go services follow?",
			map[string]int{"std-go-database-access": 2}, [][2]string{{"std-go-database-access", "std-logging-logfmt"}}},
		{"archived as the only answer", "what caused the DNS resolution failures?",
			map[string]int{"inc-2022-10-dns-outage": 3}, nil},
	}
	for _, c := range cases {
		for _, fusion := range []string{domain.FusionWeighted, domain.FusionRRF} {
			t.Run(c.name+"/"+fusion, func(t *testing.T) {
				res := mustSearch(t, s, req(c.query, func(r *domain.SearchRequest) {
					r.Options.Fusion = fusion
					r.Options.Limit = 8
					r.Options.Explain = true
				}))
				hits := append(slices.Clone(res.Primary), res.RunnerUp...)
				docs := distinct(hits)
				for doc, k := range c.top {
					if r := slices.Index(docs, doc); r < 0 || r >= k {
						t.Errorf("%s should be in the top %d documents: %v", doc, k, docs)
					}
				}
				for _, p := range c.above {
					a, b := slices.Index(docs, p[0]), slices.Index(docs, p[1])
					if a < 0 || (b >= 0 && b < a) {
						t.Errorf("%s should rank above %s: %v", p[0], p[1], docs)
					}
				}
				// A penalised hit says so.
				for _, h := range hits {
					if slices.Contains([]string{"superseded", "deprecated", "archived"}, h.Status) &&
						h.Explain.StatusPenalty == 0 {
						t.Errorf("%s is %s but its explain shows no penalty", h.DocID, h.Status)
					}
				}
			})
		}
	}
}

// distinct lists the documents of hits in order, each once.
func distinct(hits []*domain.Hit) []string {
	var out []string
	for _, h := range hits {
		if !slices.Contains(out, h.DocID) {
			out = append(out, h.DocID)
		}
	}
	return out
}

// The identifier signal: the share of the question's identifiers (letters mixed
// with digits, or an underscore) in a chunk's title and heading path. Bare numbers
// and slash-joined words are not identifiers.
func TestIdentifierSignal(t *testing.T) {
	t.Parallel()
	s := handbook(t)
	cases := []struct {
		query, first string
		named        []string // documents with a chunk whose headings name the identifier
	}{
		{"error E5032", "rb-error-e5032", []string{"rb-error-e5032"}},
		{"what does KB_RRF_K control?", "std-search-config", []string{"std-search-config"}},
		{"upgrade to v2.3.1", "rb-edge-proxy-upgrade", []string{"rb-edge-proxy-upgrade"}},
		{"postgres 16 migration plan", "dec-postgres-16-migration", nil},
		{"how do blue/green deployments switch traffic?", "dec-deploy-v2", nil},
	}
	for _, c := range cases {
		for _, fusion := range []string{domain.FusionWeighted, domain.FusionRRF} {
			t.Run(c.query+"/"+fusion, func(t *testing.T) {
				res := mustSearch(t, s, req(c.query, func(r *domain.SearchRequest) {
					r.Options.Fusion = fusion
					r.Options.Explain = true
				}))
				hits := append(slices.Clone(res.Primary), res.RunnerUp...)
				if len(hits) == 0 || hits[0].DocID != c.first {
					t.Errorf("%s should rank first: %v", c.first, distinct(hits))
				}
				named := map[string]bool{}
				for _, h := range hits {
					switch v := h.Explain.Identifier; {
					case v == 1:
						named[h.DocID] = true
					case v != 0:
						t.Errorf("%s: identifier %v, want 0 or 1 (one identifier in the question)", h.DocID, v)
					}
				}
				if got := slices.Sorted(maps.Keys(named)); !slices.Equal(got, c.named) && len(got)+len(c.named) > 0 {
					t.Errorf("documents named by their headings: %v, want %v", got, c.named)
				}
			})
		}
	}
}

func TestLexicalRescueOfExactIdentifiers(t *testing.T) {
	t.Parallel()
	s := handbook(t)
	cases := []struct{ query, want string }{
		{"error E5032", "rb-error-e5032"},
		{"what does KB_RRF_K control?", "std-search-config"},
		{"upgrade to v2.3.1", "rb-edge-proxy-upgrade"},
		{"which driver, pgx/v5?", "std-go-database-access"},
	}
	for _, c := range cases {
		t.Run(c.query, func(t *testing.T) {
			res := mustSearch(t, s, req(c.query))
			if r := rankOf(res.Primary, c.want); r < 0 {
				t.Errorf("%s should reach the top 5 (the page), got %v", c.want, docIDs(res.Primary))
			}
		})
	}
}

func TestPerDocumentCap(t *testing.T) {
	t.Parallel()
	s := handbook(t)
	for _, cap := range []int32{1, 2, 3} {
		res := mustSearch(t, s, req("postgres migration cutover plan", func(r *domain.SearchRequest) {
			r.Options.Limit = 20
			r.Options.Ranking = domain.RankingOverride{"max_chunks_per_doc": float64(cap)}
		}))
		counts := map[string]int32{}
		for _, h := range append(res.Primary, res.RunnerUp...) {
			counts[h.DocID]++
			if counts[h.DocID] > cap {
				t.Errorf("cap %d: %s has %d chunks", cap, h.DocID, counts[h.DocID])
			}
		}
	}
}

func TestFilters(t *testing.T) {
	t.Parallel()
	s := handbook(t)
	q := "cache layer decision"
	cases := []struct {
		name   string
		filter func(*domain.RawFilters)
		check  func(*domain.Hit) bool
	}{
		{"tags", func(f *domain.RawFilters) { f.Tags = []string{"redis"} },
			func(h *domain.Hit) bool { return slices.Contains(h.Tags, "redis") }},
		{"canonical_types", func(f *domain.RawFilters) { f.CanonicalTypes = []string{"decision"} },
			func(h *domain.Hit) bool { return h.CanonicalType == "decision" }},
		{"statuses", func(f *domain.RawFilters) { f.Statuses = []string{"superseded"} },
			func(h *domain.Hit) bool { return h.Status == "superseded" }},
		{"evidence_tiers", func(f *domain.RawFilters) { f.EvidenceTiers = []string{"blog"} },
			func(h *domain.Hit) bool { return h.EvidenceTier == "blog" }},
		{"exclude superseded", func(f *domain.RawFilters) { f.IncludeSuperseded = proto.Bool(false) },
			func(h *domain.Hit) bool { return h.Status != "superseded" }},
		{"doc_ids filter", func(f *domain.RawFilters) {
			f.DocIDs = []string{"dec-cache-v1", "mod-session-store"}
			f.DocIDsMode = "filter"
		}, func(h *domain.Hit) bool {
			return h.DocID == "dec-cache-v1" || h.DocID == "mod-session-store"
		}},
		{"project scope", func(f *domain.RawFilters) { f.ProjectKeys = []string{"payments"} },
			func(h *domain.Hit) bool { return h.ProjectKey == "payments" }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := mustSearch(t, s, req(q, func(r *domain.SearchRequest) { c.filter(&r.Filters) }))
			hits := slices.Concat(res.Primary, res.RunnerUp)
			if len(hits) == 0 {
				t.Fatal("filter left no results; the test corpus should have matches")
			}
			for _, h := range hits {
				if !c.check(h) {
					t.Errorf("%s violates the filter (status %q, tags %v, project %s)", h.DocID, h.Status, h.Tags, h.ProjectKey)
				}
			}
		})
	}
	t.Run("source_types", func(t *testing.T) {
		res := mustSearch(t, s, req("what did we decide", func(r *domain.SearchRequest) { r.Filters.SourceTypes = []string{"meeting-notes"} }))
		if len(res.Primary) == 0 {
			t.Fatal("no meeting notes found")
		}
		for _, h := range res.Primary {
			if !strings.HasPrefix(h.DocID, "mtg-") {
				t.Errorf("%s is not a meeting note", h.DocID)
			}
		}
	})
	t.Run("dates", func(t *testing.T) {
		res := mustSearch(t, s, req(q, func(r *domain.SearchRequest) {
			r.Filters.DateFrom, r.Filters.DateTo = "2025-01-01", "2025-12-31"
		}))
		if rankOf(res.Primary, "dec-cache-v2") < 0 {
			t.Errorf("dec-cache-v2 (2025-03-14) should pass a 2025 date filter: %v", docIDs(res.Primary))
		}
		if rankOf(append(res.Primary, res.RunnerUp...), "dec-cache-v1") >= 0 {
			t.Error("dec-cache-v1 (2023) passed a 2025 date filter")
		}
	})
	t.Run("doc_ids boost", func(t *testing.T) {
		// Without naming it, the incident is not on the page for this question...
		plain := mustSearch(t, s, req(q))
		if rankOf(plain.Primary, "int-stripe-webhooks") >= 0 {
			t.Fatalf("test premise: int-stripe-webhooks should not match %q", q)
		}
		// ...naming it (doc_ids or @slug) brings it in through the mention leg with the
		// mention boost, although neither leg matched it. A boost, not a pin.
		for _, named := range []*domain.SearchRequest{
			req(q, func(r *domain.SearchRequest) {
				r.Filters.DocIDs = []string{"int-stripe-webhooks"}
				r.Options.Explain = true
			}),
			req(q+" @int-stripe-webhooks", func(r *domain.SearchRequest) { r.Options.Explain = true }),
		} {
			res := mustSearch(t, s, named)
			all := slices.Concat(res.Primary, res.RunnerUp)
			i := rankOf(all, "int-stripe-webhooks")
			if i < 0 {
				t.Fatalf("a named document should be a candidate, got %v", docIDs(all))
			}
			if all[i].Explain.Mention != 1 {
				t.Errorf("mention signal = %v, want 1", all[i].Explain.Mention)
			}
		}
	})
}

func TestDeterministicOrder(t *testing.T) {
	t.Parallel()
	s := handbook(t)
	for _, fusion := range domain.Fusions() {
		a := mustSearch(t, s, req("incident ledger replication lag", func(r *domain.SearchRequest) { r.Options.Fusion = fusion }))
		for i := 0; i < 3; i++ {
			b := mustSearch(t, s, req("incident ledger replication lag", func(r *domain.SearchRequest) { r.Options.Fusion = fusion }))
			if !slices.Equal(chunkIDs(a), chunkIDs(b)) {
				t.Fatalf("%s: order changed between runs: %v vs %v", fusion, chunkIDs(a), chunkIDs(b))
			}
		}
	}
}

func chunkIDs(r *domain.SearchResult) []int64 {
	var out []int64
	for _, h := range append(r.Primary, r.RunnerUp...) {
		out = append(out, h.ChunkID)
	}
	return out
}

func TestInvalidRequests(t *testing.T) {
	t.Parallel()
	s := handbook(t)
	cases := []struct {
		name     string
		r        *domain.SearchRequest
		notFound bool
		want     string
	}{
		{"empty", req(""), false, "query is empty"},
		{"whitespace", req("  \n\t "), false, "query is empty"},
		{"too long", req(strings.Repeat("a", 4001)), false, "limit is 4000"},
		{"invalid utf8", req("caf\xe9"), false, "UTF-8"},
		{"limit 0 is default, 101 is not", req("x", func(r *domain.SearchRequest) { r.Options.Limit = 101 }), false, "limit must be between 1 and 100"},
		{"negative limit", req("x", func(r *domain.SearchRequest) { r.Options.Limit = -1 }), false, "limit must be between"},
		{"unknown fusion", req("x", func(r *domain.SearchRequest) { r.Options.Fusion = "magic" }), false, "unknown fusion"},
		{"dates reversed", req("x", func(r *domain.SearchRequest) { r.Filters.DateFrom, r.Filters.DateTo = "2025-02-01", "2025-01-01" }), false, "is after"},
		{"bad date", req("x", func(r *domain.SearchRequest) { r.Filters.DateFrom = "yesterday" }), false, "YYYY-MM-DD"},
		{"bad status", req("x", func(r *domain.SearchRequest) { r.Filters.Statuses = []string{"done"} }), false, "unknown value"},
		{"no project", req("x", func(r *domain.SearchRequest) { r.Filters.ProjectKeys = nil }), false, "no project"},
		{"negative weight", req("x", func(r *domain.SearchRequest) {
			r.Options.Ranking = domain.RankingOverride{"vector_weight": -1}
		}), false, "vector_weight must not be negative"},
		{"unknown project", req("x", func(r *domain.SearchRequest) { r.Filters.ProjectKeys = []string{"nope"} }), true, "unknown project"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := s.Search(context.Background(), c.r)
			if err == nil {
				t.Fatal("expected an error")
			}
			if c.notFound {
				var notFound *domain.NotFoundError
				if !errors.As(err, &notFound) {
					t.Errorf("want NotFoundError, got %T %v", err, err)
				}
			} else if !domain.IsInvalid(err) {
				t.Errorf("want InvalidError, got %T %v", err, err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("message %q should contain %q", err.Error(), c.want)
			}
		})
	}
}

func TestStopWordsOnlyQuestionIsFinite(t *testing.T) {
	t.Parallel()
	s := handbook(t)
	for _, fusion := range domain.Fusions() {
		res := mustSearch(t, s, req("what is this and why?", func(r *domain.SearchRequest) {
			r.Options.Fusion = fusion
			r.Options.Explain = true
		}))
		for _, h := range append(res.Primary, res.RunnerUp...) {
			if math.IsNaN(h.Score) || math.IsNaN(h.VectorSimilarity) {
				t.Errorf("%s: %s has a NaN score", fusion, h.DocID)
			}
		}
	}
	res := mustSearch(t, s, req("error E5032", func(r *domain.SearchRequest) { r.Options.Fusion = domain.FusionKeywordOnly }))
	for _, h := range res.Primary {
		if h.VectorSimilarity != 0 {
			t.Errorf("keyword_only must not report a cosine, got %v", h.VectorSimilarity)
		}
	}
}

func TestLegacyProjectKey(t *testing.T) {
	t.Parallel()
	s := handbook(t)
	r := req("cache layer")
	r.Filters = domain.RawFilters{ProjectKey: "payments"}
	res := mustSearch(t, s, r)
	if len(res.Primary) == 0 || res.Primary[0].ProjectKey != "payments" {
		t.Fatalf("legacy project_key should scope to payments: %v", docIDs(res.Primary))
	}
	if got := res.Meta.SearchStrategy.FiltersApplied.ProjectKeys; !slices.Equal(got, []string{"payments"}) {
		t.Errorf("filters_applied.project_keys = %v", got)
	}
}

func TestStatementIsRunnable(t *testing.T) {
	t.Parallel()
	s := handbook(t)
	stmt, err := s.Statement(context.Background(), req("what cache layer did we standardise on?"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stmt, "$1") || !strings.Contains(stmt, "SET LOCAL hnsw.ef_search") {
		t.Fatalf("statement not fully bound:\n%s", stmt[:min(len(stmt), 400)])
	}
	if !strings.Contains(stmt, "-- The question is analysed with the text-search configurations english (its language: en).\n") {
		t.Errorf("statement does not name the configuration that analyses the question:\n%s", stmt[:min(len(stmt), 400)])
	}
	// Run it as psql would (simple protocol, several statements) and compare the order.
	conn, err := pool.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	body := stmt[strings.Index(stmt, "WITH"):strings.Index(stmt, ";\nCOMMIT")]
	rows, err := conn.Query(context.Background(), "SELECT slug FROM ("+body+") s")
	if err != nil {
		t.Fatalf("bound statement does not run: %v", err)
	}
	var slugs []string
	for rows.Next() {
		var slug string
		if err := rows.Scan(&slug); err != nil {
			t.Fatal(err)
		}
		slugs = append(slugs, slug)
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	res := mustSearch(t, s, req("what cache layer did we standardise on?"))
	want := docIDs(append(res.Primary, res.RunnerUp...))
	if !slices.Equal(slugs, want) {
		t.Errorf("psql statement order %v differs from Search %v", slugs, want)
	}

}

// goldenQueries are the questions of testdata/rankings.golden.
var goldenQueries = []string{
	"what cache layer did we standardise on?",
	"how do deployment rollbacks work?",
	"error E5032",
	"why did we reject memcached?",
	"postgres 16 migration plan",
	"session store dependencies",
	"graphql gateway",
	"kafka message queue migration",
	"how are idempotency keys handled for stripe webhooks?",
	"logging format standard",
	"what is the search service rrf setting KB_RRF_K",
	"edge proxy upgrade v2.3.1",
}

// Golden ranked lists: a ranking change shows up in review as a diff of these files.
func TestGoldenRankings(t *testing.T) {
	t.Parallel()
	s := handbook(t)
	var b strings.Builder
	for _, q := range goldenQueries {
		for _, fusion := range []string{domain.FusionWeighted, domain.FusionRRF} {
			res := mustSearch(t, s, req(q, func(r *domain.SearchRequest) { r.Options.Fusion = fusion }))
			fmt.Fprintf(&b, "## %s [%s]\n", q, fusion)
			for i, h := range res.Primary {
				fmt.Fprintf(&b, "%d. %-32s %.4f  %s\n", i+1, h.DocID, h.Score, strings.Join(h.HeadingPath, " > "))
			}
			b.WriteString("\n")
		}
	}
	golden := filepath.Join("testdata", "rankings.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./search -run Golden -update)", err)
	}
	if string(want) != b.String() {
		t.Errorf("rankings changed; review and run `go test ./search -run Golden -update`\n%s", diff(string(want), b.String()))
	}
}

func diff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out strings.Builder
	for i := 0; i < max(len(al), len(bl)); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			fmt.Fprintf(&out, "-%s\n+%s\n", x, y)
		}
	}
	return out.String()
}

// A key that may see every document of the handbook (it has no access lists)
// takes the access-probing path, not the operator's: its results must be the
// operator's, hit for hit and score for score, under every fusion.
func TestAccessProbeMatchesOperatorWhenNothingIsHidden(t *testing.T) {
	t.Parallel()
	s := handbook(t)
	reader := domain.WithPrincipal(context.Background(),
		domain.Principal{KeyID: "k", Projects: []string{"platform"}, Role: domain.RoleReader, Groups: []string{"staff"}})
	questions := []string{
		"what cache layer did we standardise on?", "how do we roll back a failed deploy?",
		"who owns the payments ledger?", "E5032 error during checkout", "postgres vacuum runbook",
	}
	for _, fusion := range []string{domain.FusionWeighted, domain.FusionRRF, domain.FusionSemanticOnly, domain.FusionKeywordOnly} {
		for _, q := range questions {
			r := req(q, func(r *domain.SearchRequest) { r.Options.Fusion = fusion; r.Options.Limit = 8 })
			want := mustSearch(t, s, r)
			got, err := s.Search(reader, r)
			if err != nil {
				t.Fatal(err)
			}
			if g, w := scored(got), scored(want); !slices.Equal(g, w) {
				t.Errorf("%s %q: key %v, operator %v", fusion, q, g, w)
			}
			if g, w := docIDs(got.Rejected), docIDs(want.Rejected); !slices.Equal(g, w) {
				t.Errorf("%s %q: rejected: key %v, operator %v", fusion, q, g, w)
			}
			if g, w := got.Meta.SearchStrategy.KeywordMode, want.Meta.SearchStrategy.KeywordMode; g != w {
				t.Errorf("%s %q: keyword mode: key %q, operator %q", fusion, q, g, w)
			}
		}
	}
}

// scored lists a result's primary hits and runners-up as chunk:score.
func scored(r *domain.SearchResult) []string {
	var out []string
	for _, h := range append(slices.Clone(r.Primary), r.RunnerUp...) {
		out = append(out, fmt.Sprintf("%d:%.9f", h.ChunkID, h.Score))
	}
	return out
}

// A hit carries its document's kind, which the question intents fit: meeting
// notes list attendees, a decision does not.
func TestHitKind(t *testing.T) {
	t.Parallel()
	s := handbook(t)
	res := mustSearch(t, s, req("what was said in the relay kickoff meeting about the cache decision?", func(r *domain.SearchRequest) {
		r.Options.Limit = 20
	}))
	all := append(slices.Clone(res.Primary), res.RunnerUp...)
	want := map[string]domain.DocumentKind{
		"mtg-2024-11-19-relay-kickoff": {SourceType: "meeting-notes", Attended: true},
		"dec-cache-v2":                 {SourceType: "adr", CanonicalType: "decision"},
	}
	for doc, kind := range want {
		i := rankOf(all, doc)
		if i < 0 {
			t.Fatalf("%s not retrieved: %v", doc, docIDs(all))
		}
		if got := all[i].Kind(); got != kind {
			t.Errorf("%s: kind %+v, want %+v", doc, got, kind)
		}
	}
}

// TestSmallerPagesArePrefixes: a page smaller than the default ranks the
// default page's candidates, so its hits are the default page's first ones and
// the top hit does not change with limit.
func TestSmallerPagesArePrefixes(t *testing.T) {
	t.Parallel()
	s := handbook(t)
	for _, q := range goldenQueries {
		for _, fusion := range []string{domain.FusionWeighted, domain.FusionRRF} {
			full := mustSearch(t, s, req(q, func(r *domain.SearchRequest) { r.Options.Fusion, r.Options.Limit = fusion, 8 }))
			for limit := 1; limit < 8; limit++ {
				page := mustSearch(t, s, req(q, func(r *domain.SearchRequest) { r.Options.Fusion, r.Options.Limit = fusion, limit }))
				if got, want := hitIDs(page.Primary), hitIDs(full.Primary); !slices.Equal(got, want[:min(limit, len(want))]) {
					t.Errorf("%q [%s] limit %d: %v, want the first of %v", q, fusion, limit, got, want)
				}
			}
		}
	}
}

func hitIDs(hits []*domain.Hit) []int64 {
	out := make([]int64, len(hits))
	for i, h := range hits {
		out[i] = h.ChunkID
	}
	return out
}

// TestFrameVerbsAreHeldByTheirKind: "decide" in "what did we decide about X?"
// asks for a decision, so a decision's chunk covers it whether or not it says
// "decide"; other chunks count only the words they hold, and a yes/no question,
// which asks the verb itself, has no frame.
func TestFrameVerbsAreHeldByTheirKind(t *testing.T) {
	t.Parallel()
	s := handbook(t)
	tests := []struct {
		question string
		want     map[string]float64 // document -> the best keyword coverage of its hits
	}{
		{"what did we decide about the public API gateway?",
			map[string]float64{"dec-api-gateway": 1, "rej-graphql-gateway": 0.75, "rb-error-e5032": 0.25}},
		{"did we decide on the public API gateway?",
			map[string]float64{"dec-api-gateway": 0.75, "rej-graphql-gateway": 0.75}},
	}
	for _, tc := range tests {
		t.Run(tc.question, func(t *testing.T) {
			res := mustSearch(t, s, req(tc.question, func(r *domain.SearchRequest) { r.Options.Limit = 20 }))
			all := append(slices.Clone(res.Primary), res.RunnerUp...)
			for doc, want := range tc.want {
				if rankOf(all, doc) < 0 {
					t.Fatalf("%s not retrieved: %v", doc, docIDs(all))
				}
				best := 0.0
				for _, h := range all {
					if h.DocID == doc {
						best = max(best, h.KeywordCoverage)
					}
				}
				if math.Abs(best-want) > 1e-9 {
					t.Errorf("%s: best keyword coverage %g, want %g", doc, best, want)
				}
			}
		})
	}
}
