package hierarchy

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgvector/pgvector-go"
	"google.golang.org/protobuf/proto"

	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/embed"
	"github.com/canonkb/canon/ingest"
)

// timed runs fn b.N times and reports, besides the mean, the median and the
// fastest run: on a shared machine the mean follows the neighbours' load.
func timed(b *testing.B, fn func()) {
	b.Helper()
	var ds []time.Duration
	for b.Loop() {
		start := time.Now()
		fn()
		ds = append(ds, time.Since(start))
	}
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(ds[0].Microseconds())/1000, "min-ms")
}

var benchQuestions = []struct{ name, q string }{
	{"person", "What has Dana been working on?"},
	{"team", "what did the platform team decide about migration?"},
	{"no_entity", "how do deployment rollbacks work?"},
}

func projectID(b *testing.B, pool *pgxpool.Pool, key string) int64 {
	b.Helper()
	var id int64
	if err := pool.QueryRow(context.Background(), "SELECT id FROM projects WHERE project_key = $1", key).Scan(&id); err != nil {
		b.Fatal(err)
	}
	return id
}

func embedQuery(b testing.TB, q string) *pgvector.Vector {
	b.Helper()
	v, err := embed.NewHash(dim).EmbedQuery(context.Background(), q)
	if err != nil {
		b.Fatal(err)
	}
	vec := pgvector.NewVector(v)
	return &vec
}

// BenchmarkPass1 is the latency pass 1 adds to a search: one EntityRank
// statement (the cache is not involved). Pass1 takes any pool and project ids, so
// a latency harness can run it on any corpus.
func BenchmarkPass1(b *testing.B) {
	pool := handbookPool(b)
	ids := []int64{projectID(b, pool, "platform")}
	for _, bq := range benchQuestions {
		emb := embedQuery(b, bq.q)
		b.Run(bq.name, func(b *testing.B) {
			timed(b, func() {
				if _, err := Pass1(context.Background(), pool, bq.q, emb, ids, []string{"english"}, DefaultConfig().Pass1); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// BenchmarkPass1Entities measures pass 1 on a project with many entities (the
// handbook plus n synthetic people in teams of ten): pass 1 scores every entity
// of the project, so its cost grows with their number, not with the chunks.
func BenchmarkPass1Entities(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("entities=%d", n), func(b *testing.B) {
			pool := freshHandbook(b)
			addSyntheticEntities(b, pool, n)
			ids := []int64{projectID(b, pool, "platform")}
			for _, bq := range benchQuestions {
				emb := embedQuery(b, bq.q)
				b.Run(bq.name, func(b *testing.B) {
					timed(b, func() {
						if _, err := Pass1(context.Background(), pool, bq.q, emb, ids, []string{"english"}, DefaultConfig().Pass1); err != nil {
							b.Fatal(err)
						}
					})
				})
			}
		})
	}
}

// addSyntheticEntities adds n people (an entity page each, with a name, an alias,
// a role, two facts and a random embedding) and n/10 teams of ten to platform.
func addSyntheticEntities(b *testing.B, pool *pgxpool.Pool, n int) {
	b.Helper()
	ctx := context.Background()
	_, err := pool.Exec(ctx, `
		WITH p AS (SELECT id FROM projects WHERE project_key = 'platform'),
		docs AS (
			INSERT INTO documents (project_id, slug, title, content_hash, entity_type)
			SELECT p.id, 'synthetic-' || g, 'Person ' || g, 'x', CASE WHEN g % 11 = 0 THEN 'team' ELSE 'person' END
			FROM p, generate_series(1, $1::integer) g
			RETURNING project_id, id, slug, title, entity_type
		)
		INSERT INTO entities (project_id, document_id, slug, entity_type, name, aliases, role, facts, embedding,
		                      role_lexemes, facts_lexemes)
		SELECT x.*, tsvector_to_array(to_tsvector(canon_text_config(NULL), x.role)),
		       tsvector_to_array(to_tsvector(canon_text_config(NULL), array_to_string(x.facts, ' ')))
		FROM (
			SELECT d.project_id, d.id, d.slug, d.entity_type,
			       CASE WHEN d.entity_type = 'team' THEN 'Squad ' || md5(d.slug) ELSE initcap(left(md5(d.slug), 7)) || ' ' || initcap(left(md5(d.slug || 'x'), 9)) END,
			       ARRAY[upper(left(md5(d.slug), 1)) || '. ' || initcap(left(md5(d.slug || 'x'), 9))],
			       'Engineer, ' || (ARRAY['payments', 'search', 'ledger', 'identity'])[1 + length(d.slug) % 4] AS role,
			       ARRAY['owns the ' || left(md5(d.slug || 'y'), 6) || ' service', 'wrote the ' || left(md5(d.slug || 'z'), 6) || ' runbook'] AS facts,
			       (SELECT array_agg(random() - 0.5 + 0 * k)::vector FROM generate_series(1, $2::integer) k WHERE d.id IS NOT NULL)
			FROM docs d
		) AS x`, n+n/10, dim)
	if err != nil {
		b.Fatal(err)
	}
	_, err = pool.Exec(ctx, `
		INSERT INTO team_members (project_id, team_id, member_slug)
		SELECT t.project_id, t.id, 'synthetic-' || (t.slug_n - k)
		FROM (SELECT project_id, id, split_part(slug, '-', 2)::integer AS slug_n FROM entities
		      WHERE slug LIKE 'synthetic-%' AND entity_type = 'team') t, generate_series(1, 10) k
		ON CONFLICT DO NOTHING`)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "ANALYZE entities; ANALYZE team_members"); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkSearch compares a whole search flat and two-pass on the handbook:
// two_pass serves pass 1 and the links from the cache after the first
// iteration; two_pass_uncached drops them every iteration; no_entity_fallback is
// a question pass 1 sends back to flat (pass 1 uncached, then the flat ranking).
func BenchmarkSearch(b *testing.B) {
	h := newSearcher(b)
	ctx := context.Background()
	person := req("What has Dana been working on?", func(r *domain.SearchRequest) { r.Options.Limit = 8 })
	flat := req("What has Dana been working on?", func(r *domain.SearchRequest) {
		r.Options.Limit = 8
		r.Options.Hierarchy = proto.Bool(false)
	})
	noEntity := req("how do deployment rollbacks work?", func(r *domain.SearchRequest) { r.Options.Limit = 8 })
	noEntityFlat := req("how do deployment rollbacks work?", func(r *domain.SearchRequest) {
		r.Options.Limit = 8
		r.Options.Hierarchy = proto.Bool(false)
	})
	run := func(name string, r *domain.SearchRequest, invalidate bool) {
		b.Run(name, func(b *testing.B) {
			timed(b, func() {
				if invalidate {
					h.Invalidate([]string{"platform"})
				}
				if _, err := h.Search(ctx, r); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
	run("flat", flat, false)
	run("two_pass", person, false)
	run("two_pass_uncached", person, true)
	run("no_entity_flat", noEntityFlat, false)
	run("no_entity_fallback", noEntity, true)
}

// BenchmarkPass2Candidates times a two-pass search whose person is linked to
// many documents (the handbook plus n notes tagged with Dana's slug, found
// through documents_tag_forms): schedule is the whole search as it runs (pass
// 2 one statement over every candidate, up to 1,000, then the graph step and
// the evidence), linear_rounds pass 2 alone as the rounds of 50 more candidates
// it replaced ran (each re-ranking everything admitted so far; pass 1 and the
// links from the cache).
func BenchmarkPass2Candidates(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{100, 600} {
		b.Run(fmt.Sprintf("candidates=%d", n), func(b *testing.B) {
			pool := freshHandbook(b)
			files := make([]ingest.File, n)
			for i := range files {
				files[i] = ingest.File{Path: fmt.Sprintf("platform/notes/note-%04d.md", i), Content: fmt.Appendf(nil,
					"---\nid: note-%04d\ntitle: Weekly note %d\ntags: [dana]\nproject: platform\n---\n\n# Weekly note %d\n\n"+
						"Progress on the migration work, item %d: replicas, backups and the queue.\n", i, i, i, i)}
			}
			if _, err := newIngester(pool).Ingest(ctx, files, ingest.Options{Project: "platform"}); err != nil {
				b.Fatal(err)
			}
			if _, err := pool.Exec(ctx, "ANALYZE"); err != nil {
				b.Fatal(err)
			}
			h := New(pool, flatSearcher(pool), DefaultConfig())
			r := req("What has Dana been working on?", func(r *domain.SearchRequest) { r.Options.Limit = 8 })
			b.Run("schedule", func(b *testing.B) {
				timed(b, func() {
					res, err := h.Search(ctx, r)
					if err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(float64(res.Meta.Pass2Batches), "rounds")
				})
			})
			b.Run("linear_rounds", func(b *testing.B) {
				timed(b, func() {
					_, _, rounds := linearPass2(b, h, r)
					b.ReportMetric(float64(rounds), "rounds")
				})
			})
		})
	}
}
