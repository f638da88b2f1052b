package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/canonkb/canon/bench"
	"github.com/canonkb/canon/internal/dbtest"
	"github.com/canonkb/canon/markdown"
	"github.com/canonkb/canon/postgres"
)

// TestBulkIngestKilledMidLoad SIGKILLs a bulk `canon ingest` (a subprocess, the
// deferrable indexes dropped) once some documents are committed: the database
// then holds the indexes' definitions, and the next `canon migrate up` or
// `canon ingest` builds them exactly as the migrations made them; the ingest
// also completes the load.
func TestBulkIngestKilledMidLoad(t *testing.T) {
	vocab, err := bench.HandbookVocabulary("../../examples/handbook")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	g, err := bench.NewSynth(bench.SynthOptions{Chunks: 1500, Seed: 11, Words: vocab, Chunking: markdown.Options{}})
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	for {
		f, _, ok, err := g.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		path := filepath.Join(dir, f.Path)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, f.Content, 0o644); err != nil {
			t.Fatal(err)
		}
		files++
	}
	const project = "bulk"
	for _, tc := range []struct {
		name     string
		restore  []string
		complete bool
	}{
		{"migrate up", []string{"migrate", "up"}, false},
		{"the next ingest", []string{"ingest", dir, "--project", project}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := dbtest.FreshURL(t)
			t.Setenv("DATABASE_URL", url)
			ctx := context.Background()
			pool, err := postgres.Connect(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			indexes := func() []string {
				rows, err := pool.Query(ctx, `SELECT indexdef FROM pg_indexes WHERE tablename ~ '^(chunks|postings)(_p\d+)?$' ORDER BY indexname`)
				if err != nil {
					t.Fatal(err)
				}
				defs, err := pgx.CollectRows(rows, pgx.RowTo[string])
				if err != nil {
					t.Fatal(err)
				}
				return defs
			}
			// The project first: partitioned by project (KB_TABLE_LAYOUT), its
			// partitions and their indexes are made with it.
			if _, err := pool.Exec(ctx, `INSERT INTO projects (project_key) VALUES ($1)`, project); err != nil {
				t.Fatal(err)
			}
			want := indexes()

			runCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(runCtx, os.Args[0])
			cmd.Env = append(os.Environ(), runAsCanonEnv+"=ingest "+dir+" --project "+project, "DATABASE_URL="+url,
				"KB_INGEST_BULK_MIN_CHUNKS=1", "KB_INGEST_BULK_RATIO=0")
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			for killed := false; !killed; {
				var deferred, stored int
				if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM deferred_indexes), (SELECT count(*) FROM documents)`).
					Scan(&deferred, &stored); err != nil {
					t.Fatal(err)
				}
				select {
				case err := <-exited:
					t.Fatalf("canon ingest ended (%v) before it could be killed mid-load; grow the corpus\n%s", err, stderr.String())
				default:
				}
				if deferred > 0 && stored > 0 {
					if err := cmd.Process.Kill(); err != nil { // SIGKILL: no handler, no cleanup
						t.Fatal(err)
					}
					if err := <-exited; err == nil {
						t.Fatal("canon ingest exited cleanly though it was killed")
					}
					killed = true
					continue
				}
				time.Sleep(5 * time.Millisecond)
			}
			if got := indexes(); len(got) >= len(want) {
				t.Fatalf("killed mid-load, yet every index is there: the load did not defer any")
			}

			out, err := run(t, tc.restore...)
			if err != nil {
				t.Fatalf("%s: %v\n%s", tc.name, err, out)
			}
			if !strings.Contains(out, "interrupted bulk load") {
				t.Errorf("%s does not say it built the deferred indexes:\n%s", tc.name, out)
			}
			if got := indexes(); !slices.Equal(got, want) {
				t.Errorf("indexes after %s:\n%s\nwant\n%s", tc.name, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			var deferred, stored int
			if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM deferred_indexes), (SELECT count(*) FROM documents)`).
				Scan(&deferred, &stored); err != nil {
				t.Fatal(err)
			}
			if deferred != 0 {
				t.Errorf("%d indexes still deferred", deferred)
			}
			if tc.complete {
				checkStatistics(t, pool, project)
				if stored != files {
					t.Errorf("%d documents stored after the re-run, want %d", stored, files)
				}
			}
		})
	}
}
