package ingest_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/canonkb/canon/ingest"
)

// bulkEverything makes every load a bulk load.
var bulkEverything = ingest.BulkPolicy{MinChunks: 1, Ratio: 0, BuildMemory: "64MB", BuildWorkers: 1}

// derivedRows lists what the triggers derive from a project's chunks, by
// document and ordinal (not by chunk id): the chunks' derived columns, the
// postings, lexeme_stats and project_stats.
func derivedRows(t *testing.T, pool *pgxpool.Pool) map[string][]string {
	t.Helper()
	return map[string][]string{
		"chunks": queryStrings(t, pool, `
			SELECT p.project_key || ' ' || d.slug || '#' || c.ordinal || ' ' || md5(c.text) || ' ' || md5(c.tsv::text) || ' ' ||
			       md5(c.heading_lexemes::text) || ' ' || c.length || ' ' || md5(c.lexeme_bloom::text) || ' ' || md5(c.embedding::text)
			FROM chunks c JOIN documents d ON d.id = c.document_id JOIN projects p ON p.id = c.project_id ORDER BY 1`),
		"postings": queryStrings(t, pool, `
			SELECT p.project_key || ' ' || d.slug || '#' || c.ordinal || ' ' || s.lexeme || ' ' || s.tf || ' ' || s.tf_heading || ' ' ||
			       s.length || ' ' || s.impact
			FROM postings s JOIN chunks c ON c.id = s.chunk_id JOIN documents d ON d.id = c.document_id
			JOIN projects p ON p.id = s.project_id ORDER BY 1`),
		"lexeme_stats": queryStrings(t, pool, `
			SELECT p.project_key || ' ' || s.lexeme || ' ' || s.df FROM lexeme_stats s JOIN projects p ON p.id = s.project_id ORDER BY 1`),
		"project_stats": queryStrings(t, pool, `
			SELECT p.project_key || ' ' || s.chunk_count || ' ' || s.total_length FROM project_stats s JOIN projects p ON p.id = s.project_id ORDER BY 1`),
	}
}

// indexDefinitions lists the chunks' and postings' indexes as pg_indexes has
// them, their partitions' too (KB_TABLE_LAYOUT=partitioned).
func indexDefinitions(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	return queryStrings(t, pool, `SELECT indexdef FROM pg_indexes WHERE tablename ~ '^(chunks|postings)(_p[0-9]+)?$' ORDER BY indexname`)
}

// vectorIndex names the HNSW index over project's chunks: the table's, or in
// the partitioned layout its partition's (the project is made first, so it has one).
func vectorIndex(t *testing.T, pool *pgxpool.Pool, project string) string {
	t.Helper()
	if layoutOf(t, pool) == "single" {
		return "chunks_embedding_hnsw"
	}
	id := scalar[int64](t, pool, `INSERT INTO projects (project_key) VALUES ($1)
		ON CONFLICT (project_key) DO UPDATE SET project_key = excluded.project_key RETURNING id`, project)
	return "chunks_p" + itoa(id) + "_embedding_hnsw"
}

// synthetic is a generated corpus: docs documents of about eleven chunks each,
// linked to each other, in round's wording.
func synthetic(docs, round int) []ingest.File {
	var files []ingest.File
	for i := 0; i < docs; i++ {
		var sb strings.Builder
		fmt.Fprintf(&sb, "---\nid: doc-%03d\ntype: decision\nstatus: accepted\nrelated: [doc-%03d]\n---\n# Decision %d\n\n", i, (i+1)%docs, i)
		for s := 0; s < 10; s++ {
			fmt.Fprintf(&sb, "## Part %d of KB_RRF_K\n\n", s)
			for w := 0; w < 250; w++ {
				fmt.Fprintf(&sb, "term%d ", (i*7+s*13+w*w+round)%500)
			}
			sb.WriteString("\n\n")
		}
		files = append(files, file(fmt.Sprintf("d/%03d.md", i), sb.String()))
	}
	return files
}

// A bulk load (vector index dropped, built at the end) stores exactly what the
// row-by-row path does: the same chunks, postings and BM25 statistics, and the
// same indexes afterwards, on the handbook and on a generated corpus; and a
// later small change of a bulk-loaded project, on the row-by-row path, still
// matches.
func TestBulkLoadMatchesIncremental(t *testing.T) {
	t.Parallel()
	handbook, err := ingest.ReadDirs([]string{"../examples/handbook"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		first  []ingest.File
		change []ingest.File
	}{
		{"handbook", handbook, append(slices.Clone(handbook[1:]), file("extra.md", "# Extra\n\nA late page about KB_RRF_K.\n"))},
		{"synthetic", synthetic(40, 0), append(synthetic(40, 0)[:30], synthetic(40, 1)[30:]...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rowByRow, rowPool := newIngester(t)
			rowByRow.Workers = 1
			rowByRow.Bulk.MinChunks = 0
			bulk, bulkPool := newIngester(t)
			bulk.Workers = 1
			bulk.Bulk = bulkEverything

			want := run(t, rowByRow, "p", true, tc.first...)
			wantIndexes := indexDefinitions(t, rowPool)
			got := run(t, bulk, "p", true, tc.first...)
			if len(got.Errors) > 0 || got.Chunks != want.Chunks || got.Created != want.Created {
				t.Fatalf("bulk %+v, row by row %+v", got, want)
			}
			if got.Steps.IndexBuild <= 0 || want.Steps.IndexBuild != 0 {
				t.Errorf("index build: bulk %v, row by row %v; want only the bulk load to build", got.Steps.IndexBuild, want.Steps.IndexBuild)
			}
			compareDerived(t, "first load", derivedRows(t, rowPool), derivedRows(t, bulkPool))
			if got := indexDefinitions(t, bulkPool); !slices.Equal(got, wantIndexes) {
				t.Errorf("indexes after the bulk load:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantIndexes, "\n"))
			}
			if n := scalar[int64](t, bulkPool, "SELECT count(*) FROM deferred_indexes"); n != 0 {
				t.Errorf("%d indexes still deferred", n)
			}
			checkStats(t, bulkPool)

			// The change is small next to what is stored: row by row on both.
			// (Partitioned, the handbook's new page starts project p, whose empty
			// partition a load of any size outgrows: that one is a bulk load.)
			bulk.Bulk.Ratio = 1
			run(t, rowByRow, "p", true, tc.change...)
			res := run(t, bulk, "p", true, tc.change...)
			newProject := tc.name == "handbook" && layoutOf(t, bulkPool) == "partitioned"
			if (res.Steps.IndexBuild != 0) != newProject || res.Updated+res.Created == 0 {
				t.Errorf("the change: %+v; want it stored row by row", res)
			}
			compareDerived(t, "change", derivedRows(t, rowPool), derivedRows(t, bulkPool))
			checkStats(t, bulkPool)
		})
	}
}

func compareDerived(t *testing.T, when string, want, got map[string][]string) {
	t.Helper()
	for table, rows := range want {
		if len(rows) == 0 {
			t.Errorf("%s: no %s rows", when, table)
		}
		if !slices.Equal(got[table], rows) {
			t.Errorf("%s: %s differ: bulk %d rows, row by row %d", when, table, len(got[table]), len(rows))
		}
	}
}

// A bulk load that died after dropping the vector index (the database holds
// its recorded definition and no index) is completed by the next ingest, small
// as it may be, unless a live bulk load holds the lock: then that one builds it.
func TestDeferredIndexBuiltByTheNextIngest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	in, pool := newIngester(t)
	index := vectorIndex(t, pool, "p")
	want := indexDefinitions(t, pool)
	// What a load killed after its first step leaves.
	for _, sql := range []string{
		`INSERT INTO deferred_indexes (name, definition) SELECT '` + index + `', pg_get_indexdef('` + index + `'::regclass)`,
		`DROP INDEX ` + index,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}

	// A live bulk load (another session holding the lock) will build it itself.
	live, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := live.Exec(ctx, "SELECT pg_advisory_lock(hashtextextended('canon.bulk', 0))"); err != nil {
		t.Fatal(err)
	}
	res := run(t, in, "p", false, file("a.md", "# A\n\nAlpha.\n"))
	if res.Steps.IndexBuild != 0 || scalar[int64](t, pool, "SELECT count(*) FROM deferred_indexes") != 1 {
		t.Errorf("built the index while a bulk load held the lock: %+v", res)
	}
	if _, err := live.Exec(ctx, "SELECT pg_advisory_unlock(hashtextextended('canon.bulk', 0))"); err != nil {
		t.Fatal(err)
	}
	live.Release()

	res = run(t, in, "p", false, file("b.md", "# B\n\nBravo.\n"))
	if res.Steps.IndexBuild <= 0 || len(res.Notices) == 0 || !strings.Contains(res.Notices[0], index) {
		t.Errorf("the next ingest did not build the index: %+v", res)
	}
	if got := indexDefinitions(t, pool); !slices.Equal(got, want) {
		t.Errorf("indexes:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := scalar[int64](t, pool, "SELECT count(*) FROM deferred_indexes"); n != 0 {
		t.Errorf("%d indexes still deferred", n)
	}
}

// BulkLoad spans several Ingest calls: the index is dropped once and built
// once, at the end, also when a call fails; a second bulk load while one runs
// stores with the index as it finds it.
func TestBulkLoadSpansCalls(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	in, pool := newIngester(t)
	in.Bulk = bulkEverything
	index := vectorIndex(t, pool, "p")
	want := indexDefinitions(t, pool)
	files := synthetic(20, 0)
	br, err := in.BulkLoad(ctx, 220, func(ctx context.Context) error {
		for _, part := range [][]ingest.File{files[:10], files[10:]} {
			res, err := in.Ingest(ctx, part, ingest.Options{Project: "p"})
			if err != nil {
				return err
			}
			if res.Steps.IndexBuild != 0 {
				t.Errorf("an Ingest inside BulkLoad built the index itself")
			}
			if n := scalar[int64](t, pool, "SELECT count(*) FROM pg_indexes WHERE indexname = $1", index); n != 0 {
				t.Errorf("the vector index is there during the bulk load")
			}
		}
		// Another bulk load (not inside this one) finds the lock taken.
		inner, err := in.BulkLoad(context.Background(), 1000, func(context.Context) error { return nil })
		if err != nil || inner.Deferred {
			t.Errorf("a second bulk load ran beside the first: %+v %v", inner, err)
		}
		return fmt.Errorf("the load fails")
	})
	if err == nil || !strings.Contains(err.Error(), "the load fails") || !br.Deferred || br.IndexBuild <= 0 {
		t.Fatalf("BulkLoad = %+v, %v", br, err)
	}
	if got := indexDefinitions(t, pool); !slices.Equal(got, want) {
		t.Errorf("indexes after a failed bulk load:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	checkStats(t, pool)
	// The failed load left its mention rebuild to the next run.
	if scalar[int64](t, pool, "SELECT count(*) FROM mentions_pending") != 20 {
		t.Error("a failed bulk load cleared the mentions it left pending")
	}
}

// A BulkLoad of the handbook in two Ingest calls stores what the same two
// calls row by row do, entity mentions (rebuilt once, at the end) included;
// also when the load is too small to defer the indexes.
func TestBulkLoadOfTheHandbook(t *testing.T) {
	t.Parallel()
	files, err := ingest.ReadDirs([]string{"../examples/handbook"})
	if err != nil {
		t.Fatal(err)
	}
	// The same two calls row by row: the postings' impacts follow each
	// statement's view of the average chunk length, so the calls must match.
	half := len(files) / 2
	rowByRow, rowPool := newIngester(t)
	rowByRow.Workers = 1
	rowByRow.Bulk.MinChunks = 0
	run(t, rowByRow, "p", false, files[:half]...)
	run(t, rowByRow, "p", false, files[half:]...)
	mentions := `SELECT p.project_key || ' ' || m.entity_slug || ' ' || d.slug || ' ' || m.source || ' ' || m.strength
		FROM entity_mentions m JOIN documents d ON d.id = m.document_id JOIN projects p ON p.id = m.project_id ORDER BY 1`
	want := queryStrings(t, rowPool, mentions)
	for _, tc := range []struct {
		name     string
		policy   ingest.BulkPolicy
		deferred bool
	}{
		{"deferred indexes", bulkEverything, true},
		{"too small to defer", ingest.DefaultBulkPolicy(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bulk, bulkPool := newIngester(t)
			bulk.Workers = 1
			bulk.Bulk = tc.policy
			br, err := bulk.BulkLoad(context.Background(), 100, func(ctx context.Context) error {
				for _, part := range [][]ingest.File{files[:half], files[half:]} {
					res, err := bulk.Ingest(ctx, part, ingest.Options{Project: "p"})
					if err != nil {
						return err
					}
					if len(res.Errors) > 0 {
						return fmt.Errorf("files rejected: %v", res.Errors)
					}
					if res.Steps.Mentions != 0 {
						t.Errorf("an Ingest inside BulkLoad rebuilt the mentions itself")
					}
				}
				return nil
			})
			if err != nil || br.Deferred != tc.deferred || br.Mentions <= 0 {
				t.Fatalf("BulkLoad = %+v, %v", br, err)
			}
			compareDerived(t, "handbook", derivedRows(t, rowPool), derivedRows(t, bulkPool))
			if got := queryStrings(t, bulkPool, mentions); len(want) == 0 || !slices.Equal(got, want) {
				t.Errorf("entity mentions: bulk %d rows, row by row %d", len(got), len(want))
			}
			if scalar[bool](t, bulkPool, "SELECT bool_or(mentions_stale) OR EXISTS (SELECT FROM mentions_pending) FROM projects") {
				t.Error("projects still marked for a mention rebuild, or documents pending")
			}
		})
	}
}

// BenchmarkIngestBulk measures a first load of 200 generated documents (about
// 2,200 chunks) into an empty project, row by row and as a bulk load (the
// vector and postings_lexeme_impact indexes built after the rows, included).
func BenchmarkIngestBulk(b *testing.B) {
	for _, bc := range []struct {
		name   string
		policy ingest.BulkPolicy
	}{
		{"row_by_row", ingest.BulkPolicy{}},
		{"bulk", bulkEverything},
	} {
		b.Run(bc.name, func(b *testing.B) {
			in, _ := newIngester(b)
			in.Bulk = bc.policy
			files := synthetic(200, 0)
			for i := 0; b.Loop(); i++ {
				res, err := in.Ingest(context.Background(), files, ingest.Options{Project: fmt.Sprintf("bench-%d", i)})
				if err != nil || len(res.Errors) > 0 {
					b.Fatal(err, res.Errors)
				}
				b.ReportMetric(float64(res.Chunks)/res.Elapsed.Seconds(), "chunks/s")
			}
		})
	}
}

// The bulk lock is held by a transaction of its own (pg_try_advisory_xact_lock),
// open while the load runs and ended with it, never by a session: behind a
// pooler in transaction mode a session lock is taken on one server connection,
// released (or not) on another, and handed to whichever client gets it next.
func TestBulkLockIsATransactionsLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	in, pool := newIngester(t)
	in.Bulk = bulkEverything
	held := `SELECT coalesce(string_agg(a.state, ','), '')
		FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND l.granted AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`
	br, err := in.BulkLoad(ctx, 100, func(ctx context.Context) error {
		if got := scalar[string](t, pool, held); got != "idle in transaction" {
			t.Errorf("during the load the lock is held by %q, want one idle transaction", got)
		}
		_, err := in.Ingest(ctx, synthetic(3, 0), ingest.Options{Project: "p"})
		return err
	})
	if err != nil || !br.Deferred {
		t.Fatalf("BulkLoad = %+v, %v", br, err)
	}
	if got := scalar[string](t, pool, held); got != "" {
		t.Errorf("after the load the lock is still held (%q)", got)
	}
}
