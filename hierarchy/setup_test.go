package hierarchy

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/embed"
	"github.com/canonkb/canon/ingest"
	"github.com/canonkb/canon/internal/dbtest"
	"github.com/canonkb/canon/markdown"
	"github.com/canonkb/canon/postgres"
	"github.com/canonkb/canon/search"
)

const dim = 384

var (
	setupOnce sync.Once
	setupErr  error
	pool      *pgxpool.Pool
)

// handbookPool returns a pool on this binary's database with the example handbook
// ingested (once per test binary, as project platform and payments).
func handbookPool(t testing.TB) *pgxpool.Pool {
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
		setupErr = ingestHandbook(ctx, pool, nil)
	})
	if setupErr != nil {
		t.Fatal(setupErr)
	}
	return pool
}

// freshHandbook returns a pool on a database of its own with the handbook ingested.
func freshHandbook(t testing.TB) *pgxpool.Pool {
	t.Helper()
	p := dbtest.FreshPool(t)
	if err := ingestHandbook(context.Background(), p, nil); err != nil {
		t.Fatal(err)
	}
	return p
}

func newIngester(pool *pgxpool.Pool) *ingest.Ingester {
	return ingest.New(pool, embed.NewHash(dim), markdown.Options{ChunkTokens: 512, OverlapTokens: 64})
}

func ingestHandbook(ctx context.Context, pool *pgxpool.Pool, afterChange func([]string)) error {
	files, err := ingest.ReadDirs([]string{"../examples/handbook"})
	if err != nil {
		return err
	}
	in := newIngester(pool)
	in.AfterChange = afterChange
	res, err := in.Ingest(ctx, files, ingest.Options{Project: "platform"})
	if err != nil {
		return err
	}
	if len(res.Errors) > 0 {
		return fmt.Errorf("handbook has invalid files: %v", res.Errors)
	}
	return nil
}

func flatSearcher(pool *pgxpool.Pool) *search.Searcher {
	s := search.New(pool, embed.NewHash(dim), search.Config{
		Ranking: domain.DefaultRanking(domain.ProfileHashKeywordLed), Profile: domain.ProfileHashKeywordLed,
		Graph: search.DefaultGraphConfig(),
	})
	// Recency is relative to "today"; pin it so rankings do not age.
	s.Today = func() time.Time { return time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC) }
	return s
}

// newSearcher returns a two-pass Searcher with the default configuration, changed by mutate.
func newSearcher(t testing.TB, mutate ...func(*Config)) *Searcher {
	t.Helper()
	p := handbookPool(t)
	cfg := DefaultConfig()
	for _, m := range mutate {
		m(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return New(p, flatSearcher(p), cfg)
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

func mustSearch(t testing.TB, s interface {
	Search(context.Context, *domain.SearchRequest) (*domain.SearchResult, error)
}, r *domain.SearchRequest) *domain.SearchResult {
	t.Helper()
	res, err := s.Search(context.Background(), r)
	if err != nil {
		t.Fatalf("search %q: %v", r.Query, err)
	}
	return res
}

func docIDs(hits []*domain.Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.DocID)
	}
	return out
}

// distinctDocs lists the documents of hits in order, each once.
func distinctDocs(hits []*domain.Hit) []string {
	var out []string
	seen := map[string]bool{}
	for _, h := range hits {
		if !seen[h.DocID] {
			seen[h.DocID] = true
			out = append(out, h.DocID)
		}
	}
	return out
}
