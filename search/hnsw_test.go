package search_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgvector/pgvector-go"

	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/embed"
	"github.com/canonkb/canon/internal/dbtest"
	"github.com/canonkb/canon/postgres"
	"github.com/canonkb/canon/search"
)

// syntheticProject loads n one-chunk documents with random unit vectors straight
// through SQL (the triggers derive full text and postings); every hundredth
// document is tagged "rare".
func syntheticProject(t *testing.T, n int) *pgxpool.Pool {
	t.Helper()
	p, err := postgres.Connect(context.Background(), dbtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Its own statement: a project's partitions (KB_TABLE_LAYOUT=partitioned) exist once it has ended.
	if _, err := p.Exec(ctx, `INSERT INTO projects (project_key) VALUES ('synthetic')`); err != nil {
		t.Fatal(err)
	}
	_, err = p.Exec(ctx, `
		WITH project AS (SELECT id FROM projects WHERE project_key = 'synthetic'),
		docs AS (
			INSERT INTO documents (project_id, slug, title, content_hash, tags)
			SELECT project.id, 'doc-' || i, 'Document ' || i, 'h' || i,
			       CASE WHEN i % 100 = 0 THEN '{rare}'::text[] ELSE '{common}'::text[] END
			FROM project, generate_series(1, $1::int) AS i
			RETURNING project_id, id
		)
		INSERT INTO chunks (project_id, document_id, ordinal, text, token_count, embedding)
		SELECT d.project_id, d.id, 0, 'synthetic passage number ' || d.id, 4,
		       (SELECT array_agg(random()::real - 0.5) FROM generate_series(1, 384) WHERE d.id > 0)::vector
		FROM docs d`, n)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Exec(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	return p
}

func randomQuery(t *testing.T, p *pgxpool.Pool) pgvector.Vector {
	var v pgvector.Vector
	if err := p.QueryRow(context.Background(), `SELECT embedding FROM chunks ORDER BY id LIMIT 1`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// fixedEmbedder returns one vector for every query, so the test controls the leg.
type fixedEmbedder struct {
	embed.Embedder
	v []float32
}

func (f fixedEmbedder) EmbedQuery(context.Context, string) ([]float32, error) { return f.v, nil }

// countIndexScan runs the bare ORDER BY ... LIMIT on the HNSW index without canon's
// settings (index scan forced, iterative scans off).
func countIndexScan(t *testing.T, p *pgxpool.Pool, q pgvector.Vector, ef, limit int, tag string) int {
	t.Helper()
	ctx := context.Background()
	tx, err := p.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // nothing to keep: the rollback only ends the transaction
	for _, s := range []string{"SET LOCAL enable_seqscan = off", "SET LOCAL enable_bitmapscan = off", "SET LOCAL enable_indexscan = on",
		"SET LOCAL hnsw.iterative_scan = off", "SET LOCAL hnsw.ef_search = " + strconv.Itoa(ef)} {
		if _, err := tx.Exec(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	var n int
	err = tx.QueryRow(ctx, `SELECT count(*) FROM (
		SELECT c.id FROM chunks c JOIN documents d ON d.id = c.document_id
		WHERE $3 = '' OR $3 = ANY (d.tags)
		ORDER BY c.embedding <=> $1 LIMIT $2) s`, q, limit, tag).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

var (
	syntheticOnce sync.Once
	syntheticPool *pgxpool.Pool
)

// synthetic shares one 2,000-document corpus between the tests of this file.
func synthetic(t *testing.T) *pgxpool.Pool {
	syntheticOnce.Do(func() { syntheticPool = syntheticProject(t, 2000) })
	if syntheticPool == nil {
		t.Fatal("synthetic corpus failed to load")
	}
	return syntheticPool
}

func TestVectorLegReturnsTheFullFanout(t *testing.T) {
	p := synthetic(t)
	q := randomQuery(t, p)
	// The pitfall: a bare HNSW scan returns at most ef_search rows.
	if n := countIndexScan(t, p, q, 10, 60, ""); n >= 60 {
		t.Fatalf("premise: a bare HNSW scan with ef_search 10 should truncate, got %d rows", n)
	}
	r := domain.DefaultRanking(domain.ProfileHashKeywordLed)
	s := search.New(p, fixedEmbedder{embed.NewHash(384), q.Slice()}, search.Config{Ranking: r})
	res, err := s.Search(context.Background(), &domain.SearchRequest{
		Query:   "synthetic",
		Filters: domain.RawFilters{ProjectKeys: []string{"synthetic"}},
		Options: domain.SearchOptions{Fusion: domain.FusionSemanticOnly, Limit: 20, Ranking: domain.RankingOverride{"ef_search": 10, "candidate_multiplier": 3}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Meta.RetrievalStats.CandidatesPreThreshold; got != 60 {
		t.Errorf("vector leg returned %d candidates, want the full fanout of 60", got)
	}
	if len(res.Primary) != 20 || len(res.RunnerUp) != 20 {
		t.Errorf("page: %d primary, %d runner-up", len(res.Primary), len(res.RunnerUp))
	}
}

func TestSelectiveFilterStillFillsThePage(t *testing.T) {
	p := synthetic(t) // 20 of 2000 documents are "rare": the filter keeps 1%
	q := randomQuery(t, p)
	s := search.New(p, fixedEmbedder{embed.NewHash(384), q.Slice()}, search.Config{Ranking: domain.DefaultRanking(domain.ProfileHashKeywordLed)})
	for _, fusion := range []string{domain.FusionSemanticOnly, domain.FusionWeighted} {
		res, err := s.Search(context.Background(), &domain.SearchRequest{
			Query:   "synthetic passage",
			Filters: domain.RawFilters{ProjectKeys: []string{"synthetic"}, Tags: []string{"rare"}},
			Options: domain.SearchOptions{Fusion: fusion, Limit: 10},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Primary) != 10 {
			t.Errorf("%s: the page has %d hits, want 10", fusion, len(res.Primary))
		}
		for _, h := range append(res.Primary, res.RunnerUp...) {
			if h.Tags[0] != "rare" {
				t.Errorf("%s: %s is not tagged rare", fusion, h.DocID)
			}
		}
	}
}

// TestPageFillsAtOnePercentVisibility: the document ACL is applied inside the
// legs, never after their LIMIT, so a caller who may see 1% of a project still
// gets a full page from each leg and from their fusion.
func TestPageFillsAtOnePercentVisibility(t *testing.T) {
	p, err := postgres.Connect(context.Background(), dbtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	ctx := context.Background()
	// 2,000 one-chunk documents sharing their words; every hundredth is public,
	// the others carry access: [vault].
	// Its own statement: a project's partitions (KB_TABLE_LAYOUT=partitioned) exist once it has ended.
	if _, err := p.Exec(ctx, `INSERT INTO projects (project_key) VALUES ('vault')`); err != nil {
		t.Fatal(err)
	}
	_, err = p.Exec(ctx, `
		WITH project AS (SELECT id FROM projects WHERE project_key = 'vault'),
		docs AS (
			INSERT INTO documents (project_id, slug, title, content_hash, access)
			SELECT project.id, CASE WHEN i % 100 = 0 THEN 'public-' ELSE 'secret-' END || i, 'Document ' || i, 'h' || i,
			       CASE WHEN i % 100 = 0 THEN '{}'::text[] ELSE '{vault}'::text[] END
			FROM project, generate_series(1, 2000) AS i
			RETURNING project_id, id
		)
		INSERT INTO chunks (project_id, document_id, ordinal, text, token_count, embedding)
		SELECT d.project_id, d.id, 0, 'quarterly vault passage number ' || d.id, 4,
		       (SELECT array_agg(random()::real - 0.5) FROM generate_series(1, 384) WHERE d.id > 0)::vector
		FROM docs d`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Exec(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	q := randomQuery(t, p)
	s := search.New(p, fixedEmbedder{embed.NewHash(384), q.Slice()}, search.Config{Ranking: domain.DefaultRanking(domain.ProfileHashKeywordLed)})
	outsider := domain.WithPrincipal(ctx, domain.Principal{KeyID: "k", Projects: []string{"vault"}, Role: domain.RoleReader})
	for _, fusion := range []string{domain.FusionSemanticOnly, domain.FusionKeywordOnly, domain.FusionWeighted, domain.FusionRRF} {
		t.Run(fusion, func(t *testing.T) {
			res, err := s.Search(outsider, &domain.SearchRequest{
				Query: "quarterly vault passage", Filters: domain.RawFilters{ProjectKeys: []string{"vault"}},
				Options: domain.SearchOptions{Fusion: fusion, Limit: 10},
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Primary) != 10 {
				t.Errorf("%d hits, want a full page of 10 out of the 20 visible documents", len(res.Primary))
			}
			// The approximate keyword leg found too few visible chunks and was widened.
			if mode := res.Meta.SearchStrategy.KeywordMode; fusion != domain.FusionSemanticOnly && mode != "exact" {
				t.Errorf("keyword mode %q, want the leg widened to exact", mode)
			}
			for _, h := range append(res.Primary, res.RunnerUp...) {
				if !strings.HasPrefix(h.DocID, "public-") {
					t.Errorf("hit %s: the caller may not see it", h.DocID)
				}
			}
		})
	}
}
