package search

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/embed"
	"github.com/canonkb/canon/gen/db"
	"github.com/canonkb/canon/ingest"
	"github.com/canonkb/canon/internal/dbtest"
	"github.com/canonkb/canon/internal/sqlcapture"
	"github.com/canonkb/canon/markdown"
)

// partitionScan names a scan of one project's partition in a plan.
var partitionScan = regexp.MustCompile(`^(chunks|postings|lexeme_stats)_p(\d+)$`)

// planScans walks an EXPLAIN (ANALYZE, FORMAT JSON) tree: per partition scanned,
// its loops (0: pruned while running, "never executed"), and the subplans
// pruned at executor start, summed.
func planScans(node map[string]any, loops map[string]float64, removed *int) {
	if rel, ok := node["Relation Name"].(string); ok && partitionScan.MatchString(rel) {
		l, _ := node["Actual Loops"].(float64)
		loops[rel] += l
	}
	if n, ok := node["Subplans Removed"].(float64); ok {
		*removed += int(n)
	}
	children, _ := node["Plans"].([]any)
	for _, c := range children {
		if m, ok := c.(map[string]any); ok {
			planScans(m, loops, removed)
		}
	}
}

// In the partitioned layout the ranking statement's generic plan (the one the
// searcher runs: prelude.GenericPlan, force_generic_plan) reads only the
// partitions of the projects searched: the others are removed at executor
// start ("Subplans Removed") or never executed, their HNSW indexes untouched.
// `project_id = ANY ($1)` alone scans every partition; canon_project_slots is
// what prunes (migration 00063).
func TestRankingPrunesOtherProjectsPartitions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.FreshPool(t)
	if _, _, err := ingest.SetTableLayout(ctx, pool, "partitioned", ingest.DefaultBulkPolicy()); err != nil {
		t.Fatal(err)
	}
	files, err := ingest.ReadDirs([]string{"../examples/handbook"})
	if err != nil {
		t.Fatal(err)
	}
	in := ingest.New(pool, embed.NewHash(384), markdown.Options{ChunkTokens: 512, OverlapTokens: 64})
	ownProject := regexp.MustCompile(`(?m)^project: \S+$`)
	for _, project := range []string{"alpha", "beta", "gamma"} {
		// The handbook's pages name their own project; each copy goes to this one.
		copied := slices.Clone(files)
		for i := range copied {
			copied[i].Content = ownProject.ReplaceAll(copied[i].Content, []byte("project: "+project))
		}
		res, err := in.Ingest(ctx, copied, ingest.Options{Project: project})
		if err != nil || len(res.Errors) > 0 {
			t.Fatalf("ingest %s: %v %v", project, err, res.Errors)
		}
	}
	ids := map[string]int64{}
	for _, project := range []string{"alpha", "beta", "gamma"} {
		var id int64
		if err := pool.QueryRow(ctx, "SELECT id FROM projects WHERE project_key = $1", project).Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids[project] = id
		var n int64
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM chunks_p"+strconv.FormatInt(ids[project], 10)).Scan(&n); err != nil || n == 0 {
			t.Fatalf("project %s's partition holds %d chunks (%v)", project, n, err)
		}
	}
	var slots int
	if err := pool.QueryRow(ctx, "SELECT cardinality(canon_project_slots(array_fill(1::bigint, ARRAY[100])))").Scan(&slots); err != nil || slots != domain.MaxProjectKeys {
		t.Errorf("canon_project_slots has %d slots (%v); a search may name domain.MaxProjectKeys = %d projects", slots, err, domain.MaxProjectKeys)
	}
	s := New(pool, embed.NewHash(384), Config{Ranking: domain.DefaultRanking(domain.ProfileHashKeywordLed),
		Profile: domain.ProfileHashKeywordLed})
	s.Today = func() time.Time { return time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC) }

	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for i, c := range []struct {
		searched []string
		status   []string
	}{
		{searched: []string{"alpha"}},
		{searched: []string{"alpha", "gamma"}},
		{searched: []string{"beta"}, status: []string{"accepted"}},
	} {
		p, err := s.plan(ctx, &domain.SearchRequest{Query: "how does the cache layer expire KB_RRF_K entries",
			Filters: domain.RawFilters{ProjectKeys: c.searched, Statuses: c.status}, Options: domain.SearchOptions{Limit: 5}})
		if err != nil {
			t.Fatal(err)
		}
		st := sqlcapture.Statement{}
		if _, err := db.New(&st).SearchRank(ctx, p.params); !errors.Is(err, sqlcapture.ErrCaptured) {
			t.Fatalf("capture: %v", err)
		}
		args := make([]string, len(st.Args))
		for j, a := range st.Args {
			if args[j], err = literal(a); err != nil {
				t.Fatal(err)
			}
		}
		name := fmt.Sprintf("ranking_%d", i)
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var plan []map[string]any
		for _, sql := range []string{
			// The searcher's own session settings, with its generic plan whatever the filters.
			fmt.Sprintf("SELECT set_config('hnsw.ef_search', '%d', true), set_config('hnsw.iterative_scan', 'relaxed_order', true), "+
				"set_config('plan_cache_mode', 'force_generic_plan', true)", p.efSearch),
			"PREPARE " + name + " AS " + st.SQL,
		} {
			if _, err := tx.Exec(ctx, sql); err != nil {
				t.Fatalf("%s: %v", sql[:min(len(sql), 60)], err)
			}
		}
		if err := tx.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE "+name+"("+strings.Join(args, ", ")+")").Scan(&plan); err != nil {
			t.Fatalf("explain: %v", err)
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		loops := map[string]float64{}
		removed := 0
		planScans(plan[0]["Plan"].(map[string]any), loops, &removed)
		if removed == 0 {
			t.Errorf("%v: no \"Subplans Removed\" in the generic plan", c.searched)
		}
		read := map[string]bool{}
		for rel, l := range loops {
			m := partitionScan.FindStringSubmatch(rel)
			id, _ := strconv.ParseInt(m[2], 10, 64)
			var project string
			for k, v := range ids {
				if v == id {
					project = k
				}
			}
			if l > 0 && !slices.Contains(c.searched, project) {
				t.Errorf("%v: the plan read %s (project %s, not searched) %v times", c.searched, rel, project, l)
			}
			if l > 0 {
				read[rel] = true
			}
		}
		for _, project := range c.searched {
			if rel := "chunks_p" + strconv.FormatInt(ids[project], 10); !read[rel] {
				t.Errorf("%v: %s was never read; partitions read %v", c.searched, rel, read)
			}
		}
	}
}
