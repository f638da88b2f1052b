package hierarchy

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/canonkb/canon/internal/dbtest"
	"github.com/canonkb/canon/internal/sqlcapture"
)

// Pass 1 finds fuzzy name candidates through the trigram index, one lookup per
// word of the question (fuzzy_candidates). Let the planner flatten that lookup
// into a join and it tests every entity against every word instead: 4 ms of a
// 9 ms pass 1 at the latency corpus's 232 people, where the lookups use the
// index. The handbook has too few entities for the plan to show it; 232 people
// with short rows do (there the lookup is a scan per word, which the index
// replaces as the table grows: `canon bench latency` measures that case). Checked
// on both plans: the searcher's generic one and the one psql makes for the values.
func TestPass1LooksUpFuzzyCandidatesOneWordAtATime(t *testing.T) {
	t.Parallel()
	pool := dbtest.FreshPool(t)
	ctx := context.Background()
	var project int64
	if err := pool.QueryRow(ctx, `INSERT INTO projects (project_key) VALUES ('people') RETURNING id`).Scan(&project); err != nil {
		t.Fatal(err)
	}
	// Made-up names: two md5-derived words each.
	for _, stmt := range []string{
		`INSERT INTO documents (project_id, slug, title, content_hash)
		 SELECT $1, 'person-' || i, 'person ' || i, md5(i::text) FROM generate_series(1, 232) AS i`,
		`INSERT INTO entities (project_id, document_id, slug, entity_type, name, role)
		 SELECT d.project_id, d.id, d.slug, 'person',
		        initcap(substr(md5(d.slug), 1, 7)) || ' ' || initcap(substr(md5(d.slug || 'x'), 1, 9)), 'engineer'
		 FROM documents d WHERE d.project_id = $1`,
	} {
		if _, err := pool.Exec(ctx, stmt, project); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, "ANALYZE documents, entities"); err != nil {
		t.Fatal(err)
	}
	var name string
	if err := pool.QueryRow(ctx, `SELECT name FROM entities WHERE project_id = $1 ORDER BY id OFFSET 41 LIMIT 1`, project).Scan(&name); err != nil {
		t.Fatal(err)
	}
	var st sqlcapture.Statement
	if _, err := Pass1(ctx, &st, "what has "+name+" been working on lately?", nil, []int64{project}, []string{"english"}, DefaultConfig().Pass1); !errors.Is(err, sqlcapture.ErrCaptured) {
		t.Fatalf("capturing pass 1: %v", err)
	}
	// The searcher runs pass 1 on its generic plan (Session); the custom plan
	// (psql with the values bound) must look names up the same way.
	for _, generic := range []bool{false, true} {
		plan := explainPass1(t, pool, st, generic)
		// A lookup of its own per word: the test is a condition of the scan of
		// entities (an index condition once the table is large enough to be worth
		// it). Flattened: a join filter over every (entity, word) pair.
		if !strings.Contains(plan, "(w.word <% lower(name))") || strings.Contains(plan, "Join Filter: (w.word <% lower(") {
			t.Errorf("pass 1 (generic plan: %v) does not look fuzzy name candidates up one word at a time:\n%s", generic, plan)
		}
	}
}

// explainPass1 explains the captured statement: planned for its values, or as
// the generic plan of a prepared statement (a generic plan does not depend on the
// values, so EXPLAIN EXECUTE passes NULLs).
func explainPass1(t *testing.T, pool *pgxpool.Pool, st sqlcapture.Statement, generic bool) string {
	t.Helper()
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	query, args := "EXPLAIN "+st.SQL, st.Args
	if generic {
		if _, err := tx.Exec(ctx, "SET LOCAL plan_cache_mode = force_generic_plan"); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "PREPARE pass1 AS "+st.SQL); err != nil {
			t.Fatal(err)
		}
		query = "EXPLAIN EXECUTE pass1(" + strings.TrimSuffix(strings.Repeat("NULL, ", len(st.Args)), ", ") + ")"
		args = nil
	}
	rows, err := tx.Query(ctx, query, args...)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}
