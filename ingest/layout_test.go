package ingest_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	db "github.com/canonkb/canon/gen/db"
	"github.com/canonkb/canon/ingest"
)

// layoutOf reads the table layout the database records (migration 00061).
func layoutOf(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	return scalar[string](t, pool, "SELECT canon_table_layout()")
}

// partitionsOf lists the partitions of chunks, postings and lexeme_stats.
func partitionsOf(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	return queryStrings(t, pool, `SELECT i.inhrelid::regclass::text FROM pg_inherits i
		WHERE i.inhparent IN ('chunks'::regclass, 'postings'::regclass, 'lexeme_stats'::regclass) ORDER BY 1`)
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// checkStorage: every table (or partition) of chunks, postings and lexeme_stats
// carries its storage parameters (canon_table_storage, migration 00066).
func checkStorage(t *testing.T, pool *pgxpool.Pool, when string) {
	t.Helper()
	want := map[string]string{"chunks": "toast_tuple_target=8160", "postings": "", "lexeme_stats": "fillfactor=30"}
	rows := queryStrings(t, pool, `SELECT coalesce(p.relname, c.relname) || ' ' || c.relname || ' ' || coalesce(array_to_string(c.reloptions, ','), '')
		FROM pg_class c LEFT JOIN pg_inherits i ON i.inhrelid = c.oid LEFT JOIN pg_class p ON p.oid = i.inhparent
		WHERE c.relkind = 'r' AND coalesce(p.relname, c.relname) IN ('chunks', 'postings', 'lexeme_stats') ORDER BY 1`)
	if len(rows) < 3 {
		t.Fatalf("%s: tables %v", when, rows)
	}
	for _, row := range rows {
		table, rest, _ := strings.Cut(row, " ")
		rel, options, _ := strings.Cut(rest, " ")
		if options != want[table] {
			t.Errorf("%s: %s has storage parameters %q; want %q", when, rel, options, want[table])
		}
	}
}

// Converting to the partitioned layout and back keeps every derived row, the
// ids and their sequence, the keys, triggers and indexes (the per-partition
// ones named after the table's); a project made while partitioned gets its
// partitions, and ingests into them keep the statistics exact.
func TestTableLayoutConversion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	in, pool := newIngester(t)
	handbook, err := ingest.ReadDirs([]string{"../examples/handbook"})
	if err != nil {
		t.Fatal(err)
	}
	run(t, in, "platform", true, handbook...) // its pages name platform or payments
	run(t, in, "b", true, file("b.md", "# B\n\nBeta runs KB_RRF_K.\n"))
	if layoutOf(t, pool) != "single" && layoutOf(t, pool) != "partitioned" {
		t.Fatalf("layout %q", layoutOf(t, pool))
	}
	start := layoutOf(t, pool)
	other := map[string]string{"single": "partitioned", "partitioned": "single"}[start]
	want := derivedRows(t, pool)
	wantIDs := queryStrings(t, pool, "SELECT id::text FROM chunks ORDER BY id")
	constraints := func() []string {
		return queryStrings(t, pool, `SELECT conrelid::regclass || ' ' || conname || ' ' || pg_get_constraintdef(oid)
			FROM pg_constraint WHERE conrelid IN ('chunks'::regclass, 'postings'::regclass, 'lexeme_stats'::regclass) ORDER BY 1`)
	}
	triggers := func() []string {
		return queryStrings(t, pool, `SELECT pg_get_triggerdef(oid) FROM pg_trigger
			WHERE tgrelid IN ('chunks'::regclass, 'postings'::regclass, 'lexeme_stats'::regclass) AND NOT tgisinternal ORDER BY 1`)
	}
	wantConstraints, wantTriggers := constraints(), triggers()
	checkStorage(t, pool, start)

	for _, target := range []string{other, start} {
		changed, _, err := ingest.SetTableLayout(ctx, pool, target, bulkEverything)
		if err != nil || !changed {
			t.Fatalf("SetTableLayout(%s) = %v, %v", target, changed, err)
		}
		if got := layoutOf(t, pool); got != target {
			t.Fatalf("layout %s after converting to %s", got, target)
		}
		compareDerived(t, "converted to "+target, want, derivedRows(t, pool))
		checkStorage(t, pool, "converted to "+target)
		checkStats(t, pool)
		if got := queryStrings(t, pool, "SELECT id::text FROM chunks ORDER BY id"); !slices.Equal(got, wantIDs) {
			t.Errorf("%s: chunk ids changed", target)
		}
		if got := constraints(); !slices.Equal(got, wantConstraints) {
			t.Errorf("%s: constraints\n%s\nwant\n%s", target, strings.Join(got, "\n"), strings.Join(wantConstraints, "\n"))
		}
		if got := triggers(); !slices.Equal(got, wantTriggers) {
			t.Errorf("%s: triggers\n%s\nwant\n%s", target, strings.Join(got, "\n"), strings.Join(wantTriggers, "\n"))
		}
		parts := partitionsOf(t, pool)
		if target == "partitioned" {
			a := scalar[int64](t, pool, "SELECT id FROM projects WHERE project_key = 'platform'")
			for _, tbl := range []string{"chunks", "postings", "lexeme_stats"} {
				if name := tbl + "_p" + itoa(a); !slices.Contains(parts, name) {
					t.Errorf("partitions %v lack %s of project platform", parts, name)
				}
			}
			hnsw := queryStrings(t, pool, `SELECT indexdef FROM pg_indexes WHERE indexname = $1`, "chunks_p"+itoa(a)+"_embedding_hnsw")
			if len(hnsw) != 1 || !strings.Contains(hnsw[0], "ON public.chunks_p"+itoa(a)+" USING hnsw (embedding vector_cosine_ops)") {
				t.Errorf("project platform's HNSW index: %v", hnsw)
			}
			// A new project gets its partitions, and its rows land in them.
			run(t, in, "c", true, file("c.md", "# C\n\nGamma runs KB_RRF_K too.\n"))
			c := scalar[int64](t, pool, "SELECT id FROM projects WHERE project_key = 'c'")
			if n := scalar[int64](t, pool, "SELECT count(*) FROM chunks_p"+itoa(c)); n == 0 {
				t.Error("project c's chunks are not in chunks_p<c>")
			}
			checkStorage(t, pool, "a new project's partitions")
			checkStats(t, pool)
			if _, err := pool.Exec(ctx, "DELETE FROM projects WHERE id = $1", c); err != nil {
				t.Fatal(err)
			}
		} else if len(parts) != 0 {
			t.Errorf("single layout has partitions %v", parts)
		}
	}
	// The identity continues after the largest id (the sequence moved with the table).
	last := scalar[int64](t, pool, "SELECT max(id) FROM chunks")
	run(t, in, "d", true, file("d.md", "# D\n\nDelta runs KB_RRF_K.\n"))
	if n := scalar[int64](t, pool, "SELECT count(*) FROM chunks WHERE id > $1", last); n != 1 {
		t.Errorf("%d chunks after the largest id %d; want the new one", n, last)
	}

	if changed, _, err := ingest.SetTableLayout(ctx, pool, start, bulkEverything); err != nil || changed {
		t.Errorf("converting to the layout it has: %v, %v; want no change", changed, err)
	}
	// A function over the table's row type would go with the table: refused, named.
	if _, err := pool.Exec(ctx, "CREATE FUNCTION all_chunks() RETURNS SETOF chunks LANGUAGE sql AS 'SELECT * FROM chunks'"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ingest.SetTableLayout(ctx, pool, other, bulkEverything); err == nil || !strings.Contains(err.Error(), "function all_chunks() depends on it") {
		t.Errorf("converting under a dependent function: %v", err)
	}
	if _, err := pool.Exec(ctx, "DROP FUNCTION all_chunks"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ingest.SetTableLayout(ctx, pool, "sharded", bulkEverything); err == nil || !strings.Contains(err.Error(), "KB_TABLE_LAYOUT must be single or partitioned") {
		t.Errorf("SetTableLayout(sharded): %v", err)
	}
	live, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Release()
	if _, err := live.Exec(ctx, "SELECT pg_advisory_lock(hashtextextended('canon.bulk', 0))"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ingest.SetTableLayout(ctx, pool, other, bulkEverything); !errors.Is(err, ingest.ErrBulkLoadRunning) {
		t.Errorf("converting during a bulk load: %v; want ErrBulkLoadRunning", err)
	}
	if _, err := live.Exec(ctx, "SELECT pg_advisory_unlock(hashtextextended('canon.bulk', 0))"); err != nil {
		t.Fatal(err)
	}
}

// Partitioned by project, a bulk load drops and builds the indexes of the
// partitions of the projects it loads and no other's: another project's
// search keeps its HNSW and postings indexes throughout (the same index, never
// rebuilt). Inside BulkLoad each project is decided as its first Ingest call
// reaches it.
func TestBulkLoadRebuildsOnlyItsPartitions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	in, pool := newIngester(t)
	if _, _, err := ingest.SetTableLayout(ctx, pool, "partitioned", bulkEverything); err != nil {
		t.Fatal(err)
	}
	in.Workers = 1
	in.Bulk.MinChunks = 0
	run(t, in, "kept", true, synthetic(10, 0)...)
	kept := scalar[int64](t, pool, "SELECT id FROM projects WHERE project_key = 'kept'")
	oids := func(project int64) []string {
		return queryStrings(t, pool, `SELECT indexrelid::regclass || ' ' || indexrelid::oid FROM pg_index
			WHERE indrelid IN ($1::regclass, $2::regclass) ORDER BY 1`,
			"chunks_p"+itoa(project), "postings_p"+itoa(project))
	}
	keptIndexes := oids(kept)
	watch := func(loaded string) {
		t.Helper()
		// While loading: the loaded project's deferrable indexes are gone, the kept one's are there.
		id := scalar[int64](t, pool, "SELECT id FROM projects WHERE project_key = $1", loaded)
		names := queryStrings(t, pool, `SELECT indexname FROM pg_indexes WHERE indexname = ANY ($1) ORDER BY 1`,
			[]string{"chunks_p" + itoa(id) + "_embedding_hnsw", "postings_p" + itoa(id) + "_lexeme_impact"})
		if len(names) != 0 {
			t.Errorf("loading %s: its indexes %v are there during the load", loaded, names)
		}
		if got := oids(kept); !slices.Equal(got, keptIndexes) {
			t.Errorf("loading %s: project kept's indexes\n%v\nwant\n%v", loaded, got, keptIndexes)
		}
	}

	in.Bulk = bulkEverything
	in.Bulk.Ratio = 1
	res, err := in.BulkLoad(ctx, 220, func(ctx context.Context) error {
		for _, part := range [][]ingest.File{synthetic(10, 1)[:5], synthetic(10, 1)[5:]} {
			if _, err := in.Ingest(ctx, part, ingest.Options{Project: "loaded"}); err != nil {
				return err
			}
			watch("loaded")
		}
		return nil
	})
	if err != nil || !res.Deferred || len(res.Built) != 2 {
		t.Fatalf("BulkLoad = %+v, %v; want the two indexes of project loaded built", res, err)
	}
	loaded := scalar[int64](t, pool, "SELECT id FROM projects WHERE project_key = 'loaded'")
	for i, want := range []string{"chunks_p" + itoa(loaded) + "_embedding_hnsw", "postings_p" + itoa(loaded) + "_lexeme_impact"} {
		if res.Built[i].Name != want {
			t.Errorf("built %v; want %s", ingest.IndexNames(res.Built), want)
		}
	}
	if got := oids(kept); !slices.Equal(got, keptIndexes) {
		t.Errorf("project kept's indexes after the load\n%v\nwant\n%v", got, keptIndexes)
	}
	checkStats(t, pool)

	// A load small next to what its project holds keeps the project's indexes.
	loadedIndexes := oids(loaded)
	res, err = in.BulkLoad(ctx, 1, func(ctx context.Context) error {
		_, err := in.Ingest(ctx, []ingest.File{file("late.md", "# Late\n\nA late page about KB_RRF_K.\n")}, ingest.Options{Project: "loaded"})
		return err
	})
	if err != nil || res.Deferred || len(res.Built) != 0 || !slices.Equal(oids(loaded), loadedIndexes) {
		t.Errorf("a small load: %+v, %v; want no index rebuilt", res, err)
	}
	// A standalone Ingest decides for its own project the same way.
	one, err := in.Ingest(ctx, synthetic(10, 2), ingest.Options{Project: "other"})
	if err != nil || one.Steps.IndexBuild <= 0 {
		t.Errorf("ingest of a new project: %+v, %v; want its partition's indexes built after the rows", one, err)
	}
	if got := oids(kept); !slices.Equal(got, keptIndexes) {
		t.Errorf("project kept's indexes after the other load\n%v\nwant\n%v", got, keptIndexes)
	}
	if n := scalar[int64](t, pool, "SELECT count(*) FROM deferred_indexes"); n != 0 {
		t.Errorf("%d indexes still deferred", n)
	}
}

// Ingests that make the same new project at once: one makes it and its
// partitions, the others wait and use it (a foreign key from lexeme_stats to
// projects made them deadlock: migration 00061). Deleting the project takes its
// statistics with it.
func TestConcurrentIngestsMakeOneProject(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	in, pool := newIngester(t)
	if _, _, err := ingest.SetTableLayout(ctx, pool, "partitioned", bulkEverything); err != nil {
		t.Fatal(err)
	}
	// The statement every ingest makes its project with, six at once per project.
	q := db.New(pool)
	for p := range 10 {
		errs := make(chan error, 6)
		for range 6 {
			go func() {
				_, err := q.ProjectEnsure(ctx, "made-"+strconv.Itoa(p))
				errs <- err
			}()
		}
		for range 6 {
			if err := <-errs; err != nil {
				t.Errorf("project made-%d: %v", p, err)
			}
		}
	}
	errs := make(chan error, 6)
	for i := range 6 {
		go func() {
			_, err := in.Ingest(ctx, []ingest.File{file("n"+strconv.Itoa(i)+".md", "# Note\n\nA note about KB_RRF_K.\n")}, ingest.Options{Project: "changes"})
			errs <- err
		}()
	}
	for range 6 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	checkStats(t, pool)
	if _, err := pool.Exec(ctx, "DELETE FROM projects WHERE project_key = 'changes'"); err != nil {
		t.Fatal(err)
	}
	if n := scalar[int64](t, pool, "SELECT count(*) FROM lexeme_stats"); n != 0 {
		t.Errorf("%d lexeme_stats rows left by a deleted project", n)
	}
}

// Deleting a project drops its partitions (migration 00064), its rows gone
// through the cascade first; the other projects keep theirs, rows and
// statistics. In the single layout there is nothing to drop.
func TestDeletedProjectDropsItsPartitions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	in, pool := newIngester(t)
	for _, layout := range []string{"partitioned", "single"} {
		t.Run(layout, func(t *testing.T) {
			if _, _, err := ingest.SetTableLayout(ctx, pool, layout, bulkEverything); err != nil {
				t.Fatal(err)
			}
			run(t, in, "kept-"+layout, true, file("k.md", "# Kept\n\nKept pages about KB_RRF_K.\n"))
			run(t, in, "gone-"+layout, true, synthetic(10, 3)...)
			gone := scalar[int64](t, pool, "SELECT id FROM projects WHERE project_key = $1", "gone-"+layout)
			keptChunks := func() int64 {
				return scalar[int64](t, pool, "SELECT count(*) FROM chunks c JOIN projects p ON p.id = c.project_id WHERE p.project_key = $1", "kept-"+layout)
			}
			wantKept := keptChunks()
			before := partitionsOf(t, pool)
			if _, err := pool.Exec(ctx, "DELETE FROM projects WHERE project_key = $1", "gone-"+layout); err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, p := range before {
				if !strings.HasSuffix(p, "_p"+itoa(gone)) {
					want = append(want, p)
				}
			}
			if got := partitionsOf(t, pool); !slices.Equal(got, want) {
				t.Errorf("partitions after the delete\n%v\nwant\n%v", got, want)
			}
			if layout == "partitioned" && len(want) == len(before) {
				t.Errorf("project %d had no partitions to drop: %v", gone, before)
			}
			if n := scalar[int64](t, pool, "SELECT count(*) FROM pg_class WHERE relname ~ $1", "_p"+itoa(gone)+"($|_)"); n != 0 {
				t.Errorf("%d tables or indexes of the deleted project left", n)
			}
			if n := scalar[int64](t, pool, "SELECT count(*) FROM chunks WHERE project_id = $1", gone); n != 0 {
				t.Errorf("%d chunks of the deleted project left", n)
			}
			if got := keptChunks(); got != wantKept || got == 0 {
				t.Errorf("project kept has %d chunks after the delete; want %d", got, wantKept)
			}
			checkStats(t, pool)
		})
	}
}
