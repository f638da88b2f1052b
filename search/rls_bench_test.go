package search_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/embed"
	"github.com/canonkb/canon/internal/dbtest"
	"github.com/canonkb/canon/postgres"
	"github.com/canonkb/canon/search"
)

// rowLevelSecurity is the document ACL as PostgreSQL row-level security, on top
// of the SQL predicate, for a role the server would connect as: a chunk or a
// posting is visible when its document is (the nested EXISTS goes through the
// documents policy). The caller's view comes from two settings.
const rowLevelSecurity = `
DO $$ BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'canon_rls_bench') THEN
        CREATE ROLE canon_rls_bench NOLOGIN;
    END IF;
END $$;
GRANT USAGE ON SCHEMA public TO canon_rls_bench;
GRANT SELECT ON ALL TABLES IN SCHEMA public TO canon_rls_bench;
ALTER TABLE documents ENABLE ROW LEVEL SECURITY;
ALTER TABLE chunks ENABLE ROW LEVEL SECURITY;
ALTER TABLE postings ENABLE ROW LEVEL SECURITY;
CREATE POLICY visible ON documents FOR SELECT TO canon_rls_bench USING (
    current_setting('canon.access_all', true) = 'on' OR cardinality(access) = 0
    OR access && string_to_array(current_setting('canon.access_groups', true), ','));
CREATE POLICY visible ON chunks FOR SELECT TO canon_rls_bench USING (
    current_setting('canon.access_all', true) = 'on'
    OR EXISTS (SELECT 1 FROM documents d WHERE d.project_id = chunks.project_id AND d.id = chunks.document_id));
CREATE POLICY visible ON postings FOR SELECT TO canon_rls_bench USING (
    current_setting('canon.access_all', true) = 'on'
    OR EXISTS (SELECT 1 FROM chunks c WHERE c.project_id = postings.project_id AND c.id = postings.chunk_id));
`

// BenchmarkRowLevelSecurity measures what row-level security would add to the
// ranking statement, as defence in depth behind the SQL predicate: 20,000
// one-chunk documents of skewed random words, half of them access: [vault], a
// search per iteration by a caller without the group (custom plans, as for any
// restricted caller) and by one who sees everything (generic plans), each over
// the owner's connection (the predicate alone) and over a role under the
// policies. Results: bench/results/rls.md.
func BenchmarkRowLevelSecurity(b *testing.B) {
	ctx := context.Background()
	url := dbtest.URL(b)
	owner, err := postgres.Connect(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(owner.Close)
	// Its own statement: a project's partitions (KB_TABLE_LAYOUT=partitioned) exist once it has ended.
	if _, err := owner.Exec(ctx, `INSERT INTO projects (project_key) VALUES ('rls')`); err != nil {
		b.Fatal(err)
	}
	_, err = owner.Exec(ctx, `
		WITH project AS (SELECT id FROM projects WHERE project_key = 'rls'),
		vocabulary AS (
			SELECT array_agg(translate(substr(md5(k::text), 1, 7), '0123456789', 'ghijklmnop')) AS words
			FROM generate_series(1, 400) AS k
		),
		docs AS (
			INSERT INTO documents (project_id, slug, title, content_hash, access)
			SELECT project.id, 'doc-' || i, 'Document ' || i, 'h' || i,
			       CASE WHEN i % 2 = 0 THEN '{vault}'::text[] ELSE '{}'::text[] END
			FROM project, generate_series(1, 20000) AS i
			RETURNING project_id, id
		)
		INSERT INTO chunks (project_id, document_id, ordinal, text, token_count, embedding)
		SELECT d.project_id, d.id, 0,
		       (SELECT string_agg(v.words[1 + floor(400 * random() ^ 2)::int + 0 * g], ' ')
		        FROM generate_series(1, 40) AS g WHERE d.id > 0),
		       40,
		       (SELECT array_agg(random()::real - 0.5) FROM generate_series(1, 384) WHERE d.id > 0)::vector
		FROM docs d CROSS JOIN vocabulary v`)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := owner.Exec(ctx, "ANALYZE"); err != nil {
		b.Fatal(err)
	}
	if _, err := owner.Exec(ctx, rowLevelSecurity); err != nil {
		b.Fatal(err)
	}
	var query string
	if err := owner.QueryRow(ctx, `SELECT string_agg(translate(substr(md5(k::text), 1, 7), '0123456789', 'ghijklmnop'), ' ')
		FROM unnest('{3,40,150}'::int[]) AS k`).Scan(&query); err != nil {
		b.Fatal(err)
	}
	// underPolicies connects as the policies' role with the caller's view set for
	// the session (a server would set it in the batch it already sends per request).
	underPolicies := func(all bool, groups string) *pgxpool.Pool {
		p, err := postgres.Connect(ctx, url, func(c *pgxpool.Config) {
			register := c.AfterConnect
			c.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
				if err := register(ctx, conn); err != nil {
					return err
				}
				on := "off"
				if all {
					on = "on"
				}
				_, err := conn.Exec(ctx, `SELECT set_config('role', 'canon_rls_bench', false),
					set_config('canon.access_all', $1, false), set_config('canon.access_groups', $2, false)`, on, groups)
				return err
			}
		})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(p.Close)
		return p
	}
	restricted := domain.WithPrincipal(ctx, domain.Principal{KeyID: "k", Projects: []string{"rls"}, Role: domain.RoleReader})
	rlsRestricted, rlsAll := underPolicies(false, ""), underPolicies(true, "")
	cases := []struct {
		name, fusion string
		pool         *pgxpool.Pool
		ctx          context.Context
	}{
		{"restricted/predicate", domain.FusionWeighted, owner, restricted},
		{"restricted/predicate+rls", domain.FusionWeighted, rlsRestricted, restricted},
		{"all/predicate", domain.FusionWeighted, owner, ctx},
		{"all/predicate+rls", domain.FusionWeighted, rlsAll, ctx},
		// Where a restricted caller's time goes: each leg alone.
		{"restricted/predicate/vector_leg", domain.FusionSemanticOnly, owner, restricted},
		{"restricted/predicate/keyword_leg", domain.FusionKeywordOnly, owner, restricted},
		{"all/predicate/keyword_leg", domain.FusionKeywordOnly, owner, ctx},
	}
	for _, c := range cases {
		s := search.New(c.pool, embed.NewHash(384), search.Config{Ranking: domain.DefaultRanking(domain.ProfileHashKeywordLed)})
		b.Run(c.name, func(b *testing.B) {
			r := &domain.SearchRequest{Query: query, Filters: domain.RawFilters{ProjectKeys: []string{"rls"}},
				Options: domain.SearchOptions{Limit: 10, Fusion: c.fusion}}
			for b.Loop() {
				res, err := s.Search(c.ctx, r)
				if err != nil {
					b.Fatal(err)
				}
				if len(res.Primary) != 10 {
					b.Fatalf("%d hits, want 10", len(res.Primary))
				}
			}
		})
	}
}
