package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/canonkb/canon/bench"
	"github.com/canonkb/canon/internal/dbtest"
	"github.com/canonkb/canon/markdown"
	"github.com/canonkb/canon/postgres"
)

// storedDocument is what the database holds of one document: its hash and a
// digest of everything derived from its text.
type storedDocument struct {
	Hash     string
	Chunks   int64
	Text     string // md5 of the chunk texts in order
	Postings int64
	Node     bool
}

func storedDocuments(t *testing.T, pool *pgxpool.Pool, project string) map[string]storedDocument {
	t.Helper()
	rows, err := pool.Query(context.Background(), `
		SELECT d.slug, d.content_hash,
		       (SELECT count(*) FROM chunks c WHERE c.project_id = d.project_id AND c.document_id = d.id),
		       (SELECT md5(coalesce(string_agg(c.text, E'\x1f' ORDER BY c.ordinal), ''))
		        FROM chunks c WHERE c.project_id = d.project_id AND c.document_id = d.id),
		       (SELECT count(*) FROM postings p JOIN chunks c ON c.project_id = p.project_id AND c.id = p.chunk_id
		        WHERE c.project_id = d.project_id AND c.document_id = d.id),
		       EXISTS (SELECT 1 FROM kb_nodes n WHERE n.project_id = d.project_id AND n.document_id = d.id)
		FROM documents d JOIN projects p ON p.id = d.project_id
		WHERE p.project_key = $1`, project)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]storedDocument{}
	for rows.Next() {
		var slug string
		var d storedDocument
		if err := rows.Scan(&slug, &d.Hash, &d.Chunks, &d.Text, &d.Postings, &d.Node); err != nil {
			t.Fatal(err)
		}
		out[slug] = d
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkStatistics fails when the BM25 statistics the triggers maintain disagree
// with the rows they count: a half-applied batch would show here.
func checkStatistics(t *testing.T, pool *pgxpool.Pool, project string) {
	t.Helper()
	var chunkCount, chunks, badDF int64
	err := pool.QueryRow(context.Background(), `
		WITH project AS (SELECT id FROM projects WHERE project_key = $1),
		stats AS (SELECT lexeme, df FROM lexeme_stats WHERE project_id = (SELECT id FROM project) AND df > 0),
		counted AS (SELECT lexeme, count(*) AS n FROM postings WHERE project_id = (SELECT id FROM project) GROUP BY lexeme)
		SELECT (SELECT chunk_count FROM project_stats WHERE project_id = (SELECT id FROM project)),
		       (SELECT count(*) FROM chunks WHERE project_id = (SELECT id FROM project)),
		       (SELECT count(*) FROM stats FULL JOIN counted USING (lexeme) WHERE coalesce(stats.df, 0) <> coalesce(counted.n, 0))`,
		project).Scan(&chunkCount, &chunks, &badDF)
	if err != nil {
		t.Fatal(err)
	}
	if chunkCount != chunks || badDF != 0 {
		t.Errorf("statistics: project_stats counts %d chunks, the table holds %d; %d lexemes with a wrong df", chunkCount, chunks, badDF)
	}
}

// TestIngestKilledMidRun SIGKILLs `canon ingest` (a subprocess) while it rewrites
// a generated corpus, once some documents are committed: every document is then
// either as before or fully new (hash, chunks, postings, graph node agree), the
// BM25 statistics match the rows, and a re-run completes the change.
func TestIngestKilledMidRun(t *testing.T) {
	url := dbtest.FreshURL(t)
	t.Setenv("DATABASE_URL", url)
	dir := t.TempDir()
	vocab, err := bench.HandbookVocabulary("../../examples/handbook")
	if err != nil {
		t.Fatal(err)
	}
	g, err := bench.NewSynth(bench.SynthOptions{Chunks: 800, Seed: 7, Words: vocab, Chunking: markdown.Options{}})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
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
		paths = append(paths, path)
	}
	const project = "killed"
	if out, err := run(t, "ingest", dir, "--project", project); err != nil {
		t.Fatalf("first ingest: %v\n%s", err, out)
	}
	ctx := context.Background()
	pool, err := postgres.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	before := storedDocuments(t, pool, project)
	var oldHashes []string
	for _, d := range before {
		oldHashes = append(oldHashes, d.Hash)
	}

	// Every document changes: a paragraph more.
	for i, path := range paths {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, err = fmt.Fprintf(f, "\n\nRevision two of this page, change %d: the rollout moved to the canary ring first.\n", i)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	runCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(runCtx, os.Args[0])
	cmd.Env = append(os.Environ(), runAsCanonEnv+"=ingest "+dir+" --project "+project, "DATABASE_URL="+url)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	killed := false
	for !killed {
		var changed int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM documents d JOIN projects p ON p.id = d.project_id
			WHERE p.project_key = $1 AND d.content_hash <> ALL ($2::text[])`, project, oldHashes).Scan(&changed); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-exited:
			t.Fatalf("canon ingest ended (%v) before it could be killed with documents committed; grow the corpus\n%s", err, stderr.String())
		default:
		}
		if changed > 0 {
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

	atKill := storedDocuments(t, pool, project)
	checkStatistics(t, pool, project)
	if out, err := run(t, "ingest", dir, "--project", project); err != nil {
		t.Fatalf("re-run: %v\n%s", err, out)
	}
	after := storedDocuments(t, pool, project)
	checkStatistics(t, pool, project)

	if len(atKill) != len(before) || len(after) != len(before) {
		t.Errorf("documents: %d before, %d when killed, %d after the re-run", len(before), len(atKill), len(after))
	}
	var kept, replaced int
	for slug, d := range atKill {
		switch d {
		case before[slug]:
			kept++
		case after[slug]:
			replaced++
		default:
			t.Errorf("%s is half-written: %+v; before %+v, after %+v", slug, d, before[slug], after[slug])
		}
		if after[slug] == before[slug] {
			t.Errorf("%s did not change on the re-run", slug)
		}
	}
	if kept == 0 || replaced == 0 {
		t.Errorf("killed with %d documents as before and %d new: want the kill in the middle of the run", kept, replaced)
	}
	t.Logf("killed with %d of %d documents rewritten", replaced, len(atKill))
}
