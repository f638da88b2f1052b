package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/embed"
	"github.com/canonkb/canon/ingest"
	"github.com/canonkb/canon/internal/dbtest"
	"github.com/canonkb/canon/markdown"
)

func newIngester(t testing.TB) (*ingest.Ingester, *pgxpool.Pool) {
	pool := dbtest.FreshPool(t)
	return ingest.New(pool, embed.NewHash(384), markdown.Options{ChunkTokens: 512, OverlapTokens: 64}), pool
}

func run(t testing.TB, in *ingest.Ingester, project string, prune bool, files ...ingest.File) ingest.Result {
	t.Helper()
	res, err := in.Ingest(context.Background(), files, ingest.Options{Project: project, Prune: prune})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func file(path, content string) ingest.File { return ingest.File{Path: path, Content: []byte(content)} }

func scalar[T any](t testing.TB, pool *pgxpool.Pool, sql string, args ...any) T {
	t.Helper()
	var v T
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&v); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return v
}

func queryStrings(t testing.TB, pool *pgxpool.Pool, sql string, args ...any) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestHandbookIngestIsIdempotent(t *testing.T) {
	t.Parallel()
	in, pool := newIngester(t)
	files, err := ingest.ReadDirs([]string{"../examples/handbook"})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 40 {
		t.Fatalf("handbook has %d files; want 40+", len(files))
	}
	first := run(t, in, "idem", false, files...)
	if len(first.Errors) > 0 {
		t.Fatalf("handbook files failed: %v", first.Errors)
	}
	if first.Created != len(files) || first.Chunks == 0 {
		t.Fatalf("first run: %+v", first)
	}
	projects := queryStrings(t, pool, "SELECT project_key FROM projects ORDER BY 1")
	if !slices.Contains(projects, "platform") || !slices.Contains(projects, "payments") {
		t.Fatalf("frontmatter project: should create platform and payments, got %v", projects)
	}
	before := fingerprint(t, pool)
	second := run(t, in, "idem", false, files...)
	if second.Unchanged != len(files) || second.Created+second.Updated != 0 {
		t.Fatalf("second run should change nothing: %+v", second)
	}
	if after := fingerprint(t, pool); after != before {
		t.Errorf("an unchanged run wrote rows:\nbefore %s\nafter  %s", before, after)
	}
}

// fingerprint identifies every row version of the project tables: any insert,
// update or delete changes it (xmin names the transaction that wrote a row).
func fingerprint(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	var parts []string
	for _, table := range []string{"projects", "documents", "chunks", "postings", "lexeme_stats", "project_stats",
		"kb_nodes", "kb_edges", "doc_links", "entities", "team_members", "entity_mentions"} {
		v := scalar[string](t, pool, fmt.Sprintf(
			"SELECT count(*) || '/' || coalesce(sum(xmin::text::bigint), 0) FROM %s", table))
		parts = append(parts, table+"="+v)
	}
	return strings.Join(parts, " ")
}

func TestChangedFileReplacesItsRows(t *testing.T) {
	t.Parallel()
	in, pool := newIngester(t)
	v1 := "---\nid: dec-a\ntype: decision\nstatus: accepted\nsupersedes: [dec-old]\nattendees: [dana]\ntags: [Cache]\n---\n# A\n\nWe use Redis.\n"
	run(t, in, "chg", false, file("a.md", v1), file("old.md", "---\nid: dec-old\ntype: decision\nstatus: superseded\n---\n# Old\n\nMemcached.\n"))
	if n := scalar[int64](t, pool, "SELECT count(*) FROM kb_edges"); n != 1 {
		t.Fatalf("want 1 edge, got %d", n)
	}
	v2 := "---\nid: dec-a\ntype: decision\nstatus: accepted\nattendees: [lee]\n---\n# A\n\nWe use Valkey now.\n"
	res := run(t, in, "chg", false, file("a.md", v2), file("old.md", "---\nid: dec-old\ntype: decision\nstatus: superseded\n---\n# Old\n\nMemcached.\n"))
	if res.Updated != 1 || res.Unchanged != 1 {
		t.Fatalf("%+v", res)
	}
	if n := scalar[int64](t, pool, "SELECT count(*) FROM kb_edges"); n != 0 {
		t.Errorf("removed supersedes edge still there (%d edges)", n)
	}
	if got := queryStrings(t, pool, "SELECT entity_slug FROM entity_mentions WHERE source = 'attendee'"); !slices.Equal(got, []string{"lee"}) {
		t.Errorf("attendees = %v, want [lee]", got)
	}
	text := strings.Join(queryStrings(t, pool, "SELECT c.text FROM chunks c JOIN documents d ON d.id = c.document_id WHERE d.slug = 'dec-a'"), " ")
	if strings.Contains(text, "Redis") || !strings.Contains(text, "Valkey") {
		t.Errorf("chunks not replaced: %q", text)
	}
	if n := scalar[int64](t, pool, "SELECT count(*) FROM postings p JOIN chunks c ON c.id = p.chunk_id JOIN documents d ON d.id = c.document_id WHERE d.slug = 'dec-a' AND p.lexeme = 'redi'"); n != 0 {
		t.Errorf("stale postings for the old text: %d", n)
	}
}

func TestEdgesResolveWhenTargetArrives(t *testing.T) {
	t.Parallel()
	in, pool := newIngester(t)
	run(t, in, "late", false, file("new.md", "---\nid: dec-new\ntype: decision\nsupersedes: [dec-old]\nrelated:\n  - {to: mod-x, type: depends_on, weight: 0.9}\n---\n# New\n\nSee [[mod-x]].\n"))
	if n := scalar[int64](t, pool, "SELECT count(*) FROM kb_edges"); n != 0 {
		t.Fatalf("edges to missing documents: %d", n)
	}
	res := run(t, in, "late", false, file("old.md", "---\nid: dec-old\ntype: decision\nstatus: superseded\n---\n# Old\n\ntext\n"),
		file("x.md", "---\nid: mod-x\ntype: module-kb\n---\n# X\n\ntext\n"))
	if len(res.Errors) > 0 {
		t.Fatal(res.Errors)
	}
	got := queryStrings(t, pool, `
		SELECT fd.slug || ' ' || e.edge_type || ' ' || td.slug || ' ' || e.weight
		FROM kb_edges e
		JOIN kb_nodes f ON f.id = e.from_node_id JOIN documents fd ON fd.id = f.document_id
		JOIN kb_nodes n ON n.id = e.to_node_id JOIN documents td ON td.id = n.document_id
		ORDER BY 1`)
	want := []string{"dec-new depends_on mod-x 0.9000", "dec-new supersedes dec-old 1.0000"}
	if !slices.Equal(got, want) {
		t.Errorf("edges = %v, want %v", got, want)
	}
}

// Each chunk stores where its wikilinks are (the summary too), for the reads
// to show a link without a label as its target's title; a document whose stored
// hash migration 00077 marked is stored again, with them.
func TestWikilinkSpansAreStored(t *testing.T) {
	t.Parallel()
	in, pool := newIngester(t)
	src := "---\nid: mod-a\ntype: module-kb\n---\n# A\n\nSee [[std-b]] and [[dec-c|the decision]].\n\n## More\n\nNo link.\n"
	run(t, in, "spans", false, file("a.md", src))
	got := queryStrings(t, pool, `SELECT c.ordinal || ' ' || c.links::text FROM chunks c ORDER BY c.ordinal`)
	links := `[{"to": "std-b", "end": 9, "start": 4}, {"to": "dec-c", "end": 26, "label": true, "start": 14}]`
	if want := []string{"0 " + links, "1 " + links, "2 []"}; !slices.Equal(got, want) {
		t.Errorf("chunk links %q, want %q", got, want)
	}
	if got := scalar[string](t, pool, `SELECT summary_links::text FROM documents`); got != links {
		t.Errorf("summary links %s, want %s", got, links)
	}

	if _, err := pool.Exec(context.Background(), `UPDATE chunks SET links = '[]';
		UPDATE documents SET summary_links = '[]', content_hash = content_hash || '+links'`); err != nil {
		t.Fatal(err)
	}
	if res := run(t, in, "spans", false, file("a.md", src)); res.Updated != 1 {
		t.Errorf("a document marked by the migration: %+v, want it updated", res)
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM chunks WHERE links <> '[]'`); n != 2 {
		t.Errorf("%d chunks with links after the store again, want 2", n)
	}
}

func TestBadFilesAreReportedAndLoseNothing(t *testing.T) {
	t.Parallel()
	in, pool := newIngester(t)
	good := "---\nid: rb-a\ntype: runbook\n---\n# A\n\nRestart the worker.\n"
	run(t, in, "bad", false, file("a.md", good))
	res := run(t, in, "bad", true,
		file("a.md", "---\nid: rb-a\ntype: runbook\nstatus: [broken\n---\n# A\n"),
		file("b.md", "---\nid: b\ntype: decison\n---\n# B\n"),
		file("c.md", "---\nid: c\nretrieval_priority: 101\n---\n# C\n"),
		file("d.md", "# D\n\nbad \xff byte\n"),
		file("e.md", "---\nid: e\nrelated:\n  - {to: x, type: likes}\n---\n# E\n"),
		file("ok.md", "# Fine\n\nA good file.\n"),
	)
	if len(res.Errors) != 5 || res.Created != 1 {
		t.Fatalf("want 5 errors and 1 created, got %+v", res)
	}
	for _, e := range res.Errors {
		if e.Line < 1 || !strings.Contains(e.Error(), fmt.Sprintf("%s:%d: ", e.Path, e.Line)) {
			t.Errorf("error not in path:line: reason form: %q", e.Error())
		}
	}
	// The stored rb-a survived its broken new version and was not pruned.
	if text := scalar[string](t, pool, "SELECT c.text FROM chunks c JOIN documents d ON d.id = c.document_id WHERE d.slug = 'rb-a' AND NOT c.is_summary ORDER BY c.ordinal LIMIT 1"); !strings.Contains(text, "Restart the worker") {
		t.Errorf("stored document lost: %q", text)
	}
}

func TestPrune(t *testing.T) {
	t.Parallel()
	in, pool := newIngester(t)
	run(t, in, "prune", false, file("a.md", "# A\n\none\n"), file("b.md", "# B\n\ntwo\n"))
	res := run(t, in, "prune", false, file("a.md", "# A\n\none\n"))
	if res.Pruned != 0 || scalar[int64](t, pool, "SELECT count(*) FROM documents") != 2 {
		t.Fatal("without --prune nothing is deleted")
	}
	res = run(t, in, "prune", true, file("a.md", "# A\n\none\n"))
	if res.Pruned != 1 {
		t.Fatalf("%+v", res)
	}
	if got := queryStrings(t, pool, "SELECT slug FROM documents"); !slices.Equal(got, []string{"a"}) {
		t.Errorf("documents = %v", got)
	}
	// Statistics follow deletions exactly.
	checkStats(t, pool)
}

// An empty upload or folder is far more often a mistake (a wrong path, a
// failed mount) than a project to empty: prune with no files is refused, and
// a run with nothing to store leaves an unknown project uncreated.
func TestPruneWithoutFilesIsRefused(t *testing.T) {
	t.Parallel()
	in, pool := newIngester(t)
	run(t, in, "kept", false, file("a.md", "# A\n\none\n"), file("b.md", "# B\n\ntwo\n"))
	tests := []struct {
		name    string
		project string
		prune   bool
		files   []ingest.File
		refused bool
	}{
		{"prune with no files", "kept", true, nil, true},
		{"prune with a lone sidecar", "kept", true, []ingest.File{file("a.md.meta.yaml", "tags: [x]\n")}, true},
		{"prune with no files, unknown project", "nosuchproj", true, nil, true},
		{"no files, unknown project", "nosuchproj", false, nil, false},
		{"prune with only a bad file, unknown project", "nosuchproj", true, []ingest.File{file("bad.md", "---\ntype: nonsense\n---\n# Bad\n")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := in.Ingest(context.Background(), tt.files, ingest.Options{Project: tt.project, Prune: tt.prune})
			var invalid *domain.InvalidError
			switch {
			case tt.refused && (!errors.As(err, &invalid) || !strings.Contains(err.Error(), "would delete every document of project \""+tt.project+"\"")):
				t.Errorf("err = %v, want an InvalidError saying it would delete every document of %s", err, tt.project)
			case !tt.refused && err != nil:
				t.Errorf("err = %v", err)
			}
		})
	}
	if got := queryStrings(t, pool, "SELECT project_key FROM projects ORDER BY 1"); !slices.Equal(got, []string{"kept"}) {
		t.Errorf("projects = %v: want the refused and empty runs to create none", got)
	}
	if n := scalar[int64](t, pool, "SELECT count(*) FROM documents"); n != 2 {
		t.Errorf("%d documents left, want both", n)
	}
	// A caller that means it (the scenario harness) empties a project, and makes one.
	for _, project := range []string{"kept", "made-empty"} {
		res, err := in.Ingest(context.Background(), nil, ingest.Options{Project: project, Prune: true, PruneEmpty: true})
		if err != nil {
			t.Fatalf("PruneEmpty %s: %v", project, err)
		}
		if project == "kept" && res.Pruned != 2 {
			t.Errorf("PruneEmpty pruned %d of kept, want 2", res.Pruned)
		}
	}
	if got := queryStrings(t, pool, "SELECT project_key FROM projects ORDER BY 1"); !slices.Equal(got, []string{"kept", "made-empty"}) {
		t.Errorf("projects = %v after PruneEmpty", got)
	}
}

func checkStats(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	bad := scalar[int64](t, pool, `
		SELECT count(*) FROM (
			SELECT project_id, lexeme, count(*) AS df FROM postings GROUP BY 1, 2
		) p FULL JOIN lexeme_stats s USING (project_id, lexeme)
		WHERE p.df IS DISTINCT FROM s.df`)
	if bad != 0 {
		t.Errorf("%d lexeme_stats rows disagree with postings", bad)
	}
	bad = scalar[int64](t, pool, `
		SELECT count(*) FROM project_stats s
		LEFT JOIN (SELECT project_id, count(*) n, sum(length) len FROM chunks GROUP BY 1) c USING (project_id)
		WHERE s.chunk_count <> coalesce(c.n, 0) OR s.total_length <> coalesce(c.len, 0)`)
	if bad != 0 {
		t.Errorf("%d project_stats rows disagree with chunks", bad)
	}
	// Postings have no foreign key (a statement trigger deletes them with their
	// chunk), so check both directions: none orphaned, none missing.
	bad = scalar[int64](t, pool, `
		SELECT count(*) FROM (
			SELECT p.chunk_id, p.lexeme FROM postings p
			EXCEPT
			SELECT c.id, u.lexeme FROM chunks c, unnest(c.tsv) u
		) orphaned`)
	bad += scalar[int64](t, pool, `
		SELECT count(*) FROM (
			SELECT c.id, u.lexeme FROM chunks c, unnest(c.tsv) u
			EXCEPT
			SELECT p.chunk_id, p.lexeme FROM postings p
		) missing`)
	if bad != 0 {
		t.Errorf("%d postings disagree with the chunks' lexemes", bad)
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM postings WHERE NOT (impact > 0)`); n != 0 {
		t.Errorf("%d postings have no impact", n)
	}
}

func TestStatisticsStayExactAcrossReingests(t *testing.T) {
	t.Parallel()
	in, pool := newIngester(t)
	files, err := ingest.ReadDirs([]string{"../examples/handbook"})
	if err != nil {
		t.Fatal(err)
	}
	run(t, in, "stats", false, files...)
	checkStats(t, pool)
	// Change half the files and drop a few: statistics must still match the rows.
	var changed []ingest.File
	for i, f := range files {
		if i%7 == 0 {
			continue
		}
		if i%2 == 0 {
			f.Content = append(slices.Clone(f.Content), []byte("\n\nAddendum: revisited in review.\n")...)
		}
		changed = append(changed, f)
	}
	run(t, in, "stats", true, changed...)
	checkStats(t, pool)
}

func TestEntitiesAndMentions(t *testing.T) {
	t.Parallel()
	in, pool := newIngester(t)
	files, err := ingest.ReadDirs([]string{"../examples/handbook"})
	if err != nil {
		t.Fatal(err)
	}
	run(t, in, "ent", false, files...)
	if got := queryStrings(t, pool, `SELECT member_slug FROM team_members m JOIN entities e ON e.id = m.team_id WHERE e.slug = 'platform-team' ORDER BY 1`); !slices.Equal(got, []string{"dana", "lee", "priya"}) {
		t.Errorf("platform-team members = %v", got)
	}
	sources := queryStrings(t, pool, `SELECT DISTINCT source FROM entity_mentions WHERE entity_slug = 'dana' ORDER BY 1`)
	if !slices.Equal(sources, []string{"attendee", "frontmatter", "text"}) {
		t.Errorf("dana's mention sources = %v, want attendee, frontmatter and text", sources)
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM entity_mentions m JOIN documents d ON d.id = m.document_id WHERE m.entity_slug = 'dana' AND d.slug = 'note-working-on-this-quarter'`); n != 0 {
		t.Error("a note that never names Dana is linked to her")
	}
}

// TestStaleMentionsRebuiltByTheNextRun: an ingest killed after its batches
// committed but before the mention rebuild leaves the project marked; the next
// run rebuilds even when no file changed, and clears the mark.
func TestStaleMentionsRebuiltByTheNextRun(t *testing.T) {
	t.Parallel()
	in, pool := newIngester(t)
	files, err := ingest.ReadDirs([]string{"../examples/handbook"})
	if err != nil {
		t.Fatal(err)
	}
	run(t, in, "stale", false, files...)
	const textMentions = `SELECT count(*) FROM entity_mentions WHERE source = 'text'`
	const stale = `SELECT bool_or(mentions_stale) FROM projects`
	want := scalar[int64](t, pool, textMentions)
	if want == 0 || scalar[bool](t, pool, stale) {
		t.Fatalf("after an ingest: %d text mentions, stale %v", want, scalar[bool](t, pool, stale))
	}
	// The state a kill between the last batch and the rebuild leaves.
	if _, err := pool.Exec(context.Background(),
		`UPDATE projects SET mentions_stale = true; DELETE FROM entity_mentions WHERE source = 'text'`); err != nil {
		t.Fatal(err)
	}
	res := run(t, in, "stale", false, files...)
	if res.Created+res.Updated != 0 {
		t.Fatalf("the re-run changed %d documents; it should change none", res.Created+res.Updated)
	}
	if got := scalar[int64](t, pool, textMentions); got != want || scalar[bool](t, pool, stale) {
		t.Errorf("after the re-run: %d text mentions (want %d), stale %v", got, want, scalar[bool](t, pool, stale))
	}
}

func TestCompositeKeysKeepProjectsApart(t *testing.T) {
	t.Parallel()
	in, pool := newIngester(t)
	run(t, in, "one", false, file("a.md", "# A\n\ntext\n"))
	run(t, in, "two", false, file("b.md", "# B\n\ntext\n"))
	_, err := pool.Exec(context.Background(), `
		INSERT INTO chunks (project_id, document_id, ordinal, text, token_count, embedding)
		SELECT p.id, d.id, 99, 'x', 1, (SELECT embedding FROM chunks LIMIT 1)
		FROM projects p, documents d
		WHERE p.project_key = 'two' AND d.slug = 'a'`)
	if err == nil || !strings.Contains(err.Error(), "foreign key") {
		t.Fatalf("a chunk of project two pointing at project one's document must be refused, got %v", err)
	}
}

func TestInvalidProjectKey(t *testing.T) {
	t.Parallel()
	in, _ := newIngester(t)
	_, err := in.Ingest(context.Background(), []ingest.File{file("a.md", "# A\n")}, ingest.Options{Project: "Bad Key"})
	if err == nil || !strings.Contains(err.Error(), "invalid project key") {
		t.Fatalf("got %v", err)
	}
}

// BenchmarkIngest measures ingest throughput on synthetic documents (about ten
// chunks each) with the default hash embedder.
func BenchmarkIngest(b *testing.B) {
	in, _ := newIngester(b)
	words := strings.Fields("cache layer redis cluster replication lag ledger migration postgres runbook deploy canary " +
		"rollback incident tenant shard queue kafka consumer offset latency budget error retry backoff session store")
	const docs = 100
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		var files []ingest.File
		for d := 0; d < docs; d++ {
			var sb strings.Builder
			fmt.Fprintf(&sb, "# Doc %d-%d\n\n", i, d)
			for s := 0; s < 10; s++ {
				fmt.Fprintf(&sb, "## Section %d\n\n", s)
				for w := 0; w < 300; w++ {
					sb.WriteString(words[(d*31+s*7+w*13+i)%len(words)])
					sb.WriteByte(' ')
				}
				sb.WriteString("\n\n")
			}
			files = append(files, file(fmt.Sprintf("bench-%d/%d.md", i, d), sb.String()))
		}
		res, err := in.Ingest(context.Background(), files, ingest.Options{Project: "bench"})
		if err != nil || len(res.Errors) > 0 {
			b.Fatal(err, res.Errors)
		}
		b.ReportMetric(float64(res.Chunks)/res.Elapsed.Seconds(), "chunks/s")
	}
}

// Files are stored a batch per transaction; when the database refuses one file
// of a batch, the others are stored on their own and only that file is reported.
func TestStoreFailureCostsOnlyItsFile(t *testing.T) {
	t.Parallel()
	in, pool := newIngester(t)
	// A real refusal from the database, not a parse error: a trigger that
	// rejects one slug.
	for _, sql := range []string{
		`CREATE FUNCTION reject_slug() RETURNS trigger LANGUAGE plpgsql AS $$
		 BEGIN IF NEW.slug = 'explodes' THEN RAISE EXCEPTION 'refused by test trigger'; END IF; RETURN NEW; END $$`,
		`CREATE TRIGGER reject_slug BEFORE INSERT OR UPDATE ON documents FOR EACH ROW EXECUTE FUNCTION reject_slug()`,
	} {
		if _, err := pool.Exec(context.Background(), sql); err != nil {
			t.Fatal(err)
		}
	}
	res := run(t, in, "batch", false,
		file("a.md", "---\ntype: runbook\n---\n# A\n\nAlpha runbook text.\n"),
		file("b.md", "---\nid: explodes\n---\n# B\n\nBravo text.\n"),
		file("c.md", "---\nid: c\ntype: decision\nstatus: accepted\nrelated: [a]\n---\n# C\n\nCharlie decision.\n"),
	)
	if res.Created != 2 || len(res.Errors) != 1 || res.Errors[0].Path != "b.md" ||
		!strings.Contains(res.Errors[0].Reason, "refused by test trigger") {
		t.Fatalf("want a and c created and only b.md reported, got %+v", res)
	}
	if n := scalar[int64](t, pool, "SELECT count(*) FROM documents"); n != 2 {
		t.Errorf("%d documents stored, want 2", n)
	}
	if n := scalar[int64](t, pool, "SELECT count(*) FROM kb_edges"); n != 1 {
		t.Errorf("%d edges, want c -> a", n)
	}
	checkStats(t, pool)
}

// Batches stored side by side (Workers > 1) leave exactly what one at a time
// does: the same edges (links between documents of different batches resolve
// whichever commits first), exact BM25 statistics, and chunk ids in file order.
// The second round rewrites half the documents' links so re-ingests race too.
func TestParallelBatchesMatchSerial(t *testing.T) {
	t.Parallel()
	const docs = 120 // eleven chunks each: four workers' batches of 330
	corpus := func(round int) []ingest.File {
		var files []ingest.File
		for i := 0; i < docs; i++ {
			var sb strings.Builder
			next, far := (i+1)%docs, (i+37+round*11)%docs
			fmt.Fprintf(&sb, "---\nid: doc-%02d\ntype: decision\nstatus: accepted\nrelated:\n  - doc-%02d\n"+
				"  - {to: doc-%02d, type: depends_on, weight: 0.9}\n", i, next, far)
			if i%2 == round%2 && i > 0 {
				fmt.Fprintf(&sb, "supersedes: [doc-%02d]\n", i-1)
			}
			fmt.Fprintf(&sb, "---\n# Decision %d\n\n", i)
			for s := 0; s < 10; s++ {
				fmt.Fprintf(&sb, "## Part %d\n\n", s)
				for w := 0; w < 250; w++ {
					fmt.Fprintf(&sb, "term%d ", (i*7+s*13+w*w+round)%400)
				}
				sb.WriteString("\n\n")
			}
			files = append(files, file(fmt.Sprintf("d/%03d.md", i), sb.String()))
		}
		return files
	}
	edges := func(pool *pgxpool.Pool) []string {
		return queryStrings(t, pool, `
			SELECT fd.slug || ' ' || e.edge_type || ' ' || td.slug || ' ' || e.weight
			FROM kb_edges e
			JOIN kb_nodes fn ON fn.id = e.from_node_id JOIN documents fd ON fd.id = fn.document_id
			JOIN kb_nodes tn ON tn.id = e.to_node_id JOIN documents td ON td.id = tn.document_id
			ORDER BY 1`)
	}
	serial, serialPool := newIngester(t)
	serial.Workers = 1
	parallel, parallelPool := newIngester(t)
	parallel.Workers = 4
	for round := 0; round < 2; round++ {
		files := corpus(round)
		rs := run(t, serial, "p", false, files...)
		rp := run(t, parallel, "p", false, files...)
		if len(rs.Errors)+len(rp.Errors) > 0 || rs.Chunks != rp.Chunks || rs.Chunks < 5*256 {
			t.Fatalf("round %d: serial %+v, parallel %+v", round, rs, rp)
		}
		want, got := edges(serialPool), edges(parallelPool)
		if len(want) < 2*docs || !slices.Equal(got, want) {
			t.Fatalf("round %d: parallel edges differ from serial (%d vs %d)", round, len(got), len(want))
		}
		checkStats(t, parallelPool)
		// Chunk ids follow the files: sorted by id, chunks come in path, ordinal order.
		order := queryStrings(t, parallelPool, `
			SELECT d.source_path || '#' || c.ordinal FROM chunks c JOIN documents d ON d.id = c.document_id ORDER BY c.id`)
		if !slices.IsSortedFunc(order, func(a, b string) int {
			pa, oa, _ := strings.Cut(a, "#")
			pb, ob, _ := strings.Cut(b, "#")
			if c := strings.Compare(pa, pb); c != 0 {
				return c
			}
			na, _ := strconv.Atoi(oa)
			nb, _ := strconv.Atoi(ob)
			return na - nb
		}) {
			t.Errorf("round %d: chunk ids do not follow file order", round)
		}
	}
}

// A chunk row (embedding, text, tsvector) is read whole by the searcher: its
// text must not sit in the TOAST table (migration 00011), where each hit would
// cost a TOAST lookup and a decompression.
func TestChunkRowsStayInline(t *testing.T) {
	t.Parallel()
	in, pool := newIngester(t)
	var body strings.Builder
	body.WriteString("# Long runbook\n\n")
	for i := 0; body.Len() < 3000; i++ {
		fmt.Fprintf(&body, "Step %d: drain node-%d, rotate certificate cert-%d and record the outcome. ", i, i*7, i*13)
	}
	run(t, in, "inline", false, file("long.md", body.String()))
	// Premise: the row is over the 2 kB PostgreSQL toasts by default.
	if n := scalar[int64](t, pool, "SELECT count(*) FROM chunks c WHERE pg_column_size(c.*) > 2032"); n == 0 {
		t.Fatal("premise: no chunk row exceeds 2 kB")
	}
	// The table's, or in the partitioned layout the partition's holding the rows.
	toast := scalar[string](t, pool, "SELECT c.reltoastrelid::regclass::text FROM pg_class c WHERE c.oid = (SELECT ch.tableoid FROM chunks ch LIMIT 1)")
	if n := scalar[int64](t, pool, "SELECT count(*) FROM "+toast); n != 0 {
		t.Errorf("%d TOAST rows for chunks; want every chunk row inline", n)
	}
}

// TestStaleStatisticsAreAnalysed: an ingest analyses the tables it filled before
// it reads them back (the mention rebuild, the first questions), sooner than
// autovacuum would; planned without statistics, the rebuild reads every chunk
// once per entity name. Later, only what changed past autovacuum's threshold is
// analysed again.
func TestStaleStatisticsAreAnalysed(t *testing.T) {
	t.Parallel()
	in, pool := newIngester(t)
	ctx := context.Background()
	var files []ingest.File
	for i := range 60 {
		files = append(files, file(fmt.Sprintf("note-%02d.md", i),
			fmt.Sprintf("# Note %d\n\nThe cache layer of service %d is Redis, reviewed in week %d.\n", i, i, i)))
	}
	run(t, in, "stats", false, files...)
	// In the partitioned layout the project's partition holds its rows.
	analysed := func(table string) bool {
		return scalar[bool](t, pool, `SELECT coalesce(bool_and(s.last_analyze IS NOT NULL), false)
			FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
			WHERE c.relkind = 'r' AND (s.relname = $1 OR s.relname ~ ('^' || $1 || '_p[0-9]+$'))`, table)
	}
	for _, table := range []string{"documents", "chunks", "postings", "lexeme_stats"} {
		if !analysed(table) {
			t.Errorf("after the first load of a fresh database, %s has no statistics", table)
		}
	}

	// Rows changed on one connection whose counters are flushed, so the
	// function sees them now rather than within the second PostgreSQL allows.
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	id := scalar[int64](t, pool, `SELECT id FROM projects WHERE project_key = 'stats'`)
	staleNow := func() []string {
		t.Helper()
		if _, err := conn.Exec(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
			t.Fatal(err)
		}
		var got []string
		if err := conn.QueryRow(ctx, `SELECT canon_analyze_stale($1, true)`, id).Scan(&got); err != nil {
			t.Fatal(err)
		}
		// The rebuild empties mentions_pending after analysing it.
		got = slices.DeleteFunc(got, func(rel string) bool { return rel == "mentions_pending" })
		for i, rel := range got {
			got[i] = strings.TrimSuffix(rel, fmt.Sprintf("_p%d", id))
		}
		return got
	}
	if got := staleNow(); len(got) != 0 {
		t.Errorf("nothing changed since the ingest, yet %v were analysed", got)
	}
	// Autovacuum visits each of a test run's many databases within a second or
	// so; analysing chunks before canon_analyze_stale does would leave it nothing.
	if _, err := conn.Exec(ctx, `DO $$
		DECLARE r regclass;
		BEGIN
			FOR r IN SELECT c.oid FROM pg_class c WHERE c.relkind = 'r' AND c.relname ~ '^chunks(_p[0-9]+)?$' LOOP
				EXECUTE format('ALTER TABLE %s SET (autovacuum_enabled = off)', r);
			END LOOP;
		END $$`); err != nil {
		t.Fatal(err)
	}
	// 60 of 60 chunks rewritten: past 50 + 10%; 5 of 60 documents: not.
	if _, err := conn.Exec(ctx, `UPDATE chunks SET token_count = token_count WHERE project_id = $1`, id); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `UPDATE documents SET title = title WHERE project_id = $1 AND slug IN (SELECT slug FROM documents WHERE project_id = $1 ORDER BY slug LIMIT 5)`, id); err != nil {
		t.Fatal(err)
	}
	// A small ingest leaves a table merely behind to autovacuum.
	analysedAt := func() string {
		return scalar[string](t, pool, `SELECT coalesce(max(s.last_analyze)::text, '') FROM pg_stat_user_tables s
			JOIN pg_class c ON c.oid = s.relid WHERE c.relkind = 'r' AND (s.relname = 'chunks' OR s.relname ~ '^chunks_p[0-9]+$')`)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
		t.Fatal(err)
	}
	before := analysedAt()
	files[0].Content = append(files[0].Content, []byte("\nRevisited.\n")...)
	run(t, in, "stats", false, files...)
	if after := analysedAt(); after != before {
		t.Errorf("a one-file ingest analysed chunks (%s, before %s)", after, before)
	}
	if got := staleNow(); !slices.Equal(got, []string{"chunks"}) {
		t.Errorf("after rewriting every chunk and 5 documents, analysed %v; want [chunks]", got)
	}
	if got := staleNow(); len(got) != 0 {
		t.Errorf("analysed %v twice", got)
	}
}

// TestIncrementalMentionsMatchAFullRebuild: a change that leaves the entities as
// they were rebuilds the body mentions of the changed documents only, and they
// come out as a rebuild of the whole project makes them, row for row.
func TestIncrementalMentionsMatchAFullRebuild(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	in, pool := newIngester(t)
	files, err := ingest.ReadDirs([]string{"../examples/handbook"})
	if err != nil {
		t.Fatal(err)
	}
	run(t, in, "inc", false, files...)
	const textMentions = `SELECT m.entity_slug || ' ' || d.slug || ' ' || m.strength FROM entity_mentions m
		JOIN documents d ON d.id = m.document_id WHERE m.source = 'text' AND d.slug <> $1 ORDER BY 1`
	const untouched = "inc-2024-07-ledger-lag"
	before := queryStrings(t, pool, textMentions, "")
	// An unchanged document's mentions, removed behind canon's back: an
	// incremental rebuild does not read it, so they stay away until a full one.
	if _, err := pool.Exec(ctx, `DELETE FROM entity_mentions m USING documents d
		WHERE d.id = m.document_id AND d.slug = $1 AND m.source = 'text'`, untouched); err != nil {
		t.Fatal(err)
	}
	edits := map[string]func(string) string{
		// Names Marco twice more, by his alias and his full name.
		"dec-cache-v2.md": func(s string) string { return s + "\n\nReviewed with Marco Rossi; M. Rossi signed off.\n" },
		// No longer names him.
		"mod-search-service.md": func(s string) string { return strings.ReplaceAll(s, "Marco Rossi", "the data team") },
	}
	edited := slices.Clone(files)
	for i, f := range edited {
		for name, edit := range edits {
			if strings.HasSuffix(f.Path, "/"+name) {
				edited[i].Content = []byte(edit(string(f.Content)))
				delete(edits, name)
			}
		}
	}
	if len(edits) != 0 {
		t.Fatalf("handbook files not found: %v", edits)
	}
	if res := run(t, in, "inc", false, edited...); res.Updated != 2 {
		t.Fatalf("the edit run updated %d documents; want 2", res.Updated)
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM mentions_pending`); n != 0 ||
		scalar[bool](t, pool, `SELECT bool_or(mentions_stale) FROM projects`) {
		t.Fatalf("after the rebuild %d documents are still pending, or a project is marked", n)
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM entity_mentions m JOIN documents d ON d.id = m.document_id
		WHERE d.slug = $1 AND m.source = 'text'`, untouched); n != 0 {
		t.Fatalf("the rebuild read %s, which did not change (%d mentions): it was not incremental", untouched, n)
	}
	got := queryStrings(t, pool, textMentions, untouched)
	if slices.Equal(got, before) {
		t.Fatal("the edits changed no mention")
	}
	for _, want := range []string{"marco dec-cache-v2 3"} {
		if !slices.Contains(got, want) {
			t.Errorf("mentions lack %q: %v", want, got)
		}
	}
	for _, row := range got {
		if strings.HasPrefix(row, "marco mod-search-service ") {
			t.Errorf("mod-search-service no longer names Marco, yet: %s", row)
		}
	}

	// A rebuild of the whole project, as after an entity change.
	if _, err := pool.Exec(ctx, `UPDATE projects SET mentions_stale = true`); err != nil {
		t.Fatal(err)
	}
	run(t, in, "inc", false, edited...)
	if want := queryStrings(t, pool, textMentions, untouched); !slices.Equal(got, want) {
		t.Errorf("incremental mentions differ from a full rebuild's:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM entity_mentions m JOIN documents d ON d.id = m.document_id
		WHERE d.slug = $1 AND m.source = 'text'`, untouched); n == 0 {
		t.Errorf("the full rebuild did not restore %s's mentions", untouched)
	}
}

// An id belongs to one file: a file that takes the id of a stored document of
// another file is refused and the stored document kept, unless the run shows
// the id moved (the other file is in the run with another id, or the run is
// the whole project).
func TestStoredIDBelongsToItsFile(t *testing.T) {
	t.Parallel()
	adr := file("decisions/adr-011.md", "---\nid: adr-011\ntype: decision\nstatus: accepted\n---\n# Geocoder: Pelias\n\nWe run Pelias.\n")
	tests := []struct {
		name      string
		prune     bool
		files     []ingest.File
		wantErr   bool
		wantPath  string // adr-011's stored source path afterwards
		wantTitle string
	}{
		{"another file's id is refused", false,
			[]ingest.File{file("dup-id.md", "---\nid: adr-011\n---\n# Duplicate id\n\nScratch.\n")},
			true, "decisions/adr-011.md", "Geocoder: Pelias"},
		{"the whole project (--prune): the file was moved", true,
			[]ingest.File{file("moved/adr-011.md", "---\nid: adr-011\ntype: decision\nstatus: accepted\n---\n# Geocoder: Pelias\n\nWe run Pelias.\n")},
			false, "moved/adr-011.md", "Geocoder: Pelias"},
		{"the old file is in the run with another id", false,
			[]ingest.File{file("decisions/adr-011.md", "---\nid: adr-012\n---\n# Other\n\nText.\n"),
				file("new.md", "---\nid: adr-011\n---\n# Renumbered\n\nText.\n")},
			false, "new.md", "Renumbered"},
		{"the same file again", false, []ingest.File{adr}, false, "decisions/adr-011.md", "Geocoder: Pelias"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in, pool := newIngester(t)
			run(t, in, "ids", false, adr)
			res := run(t, in, "ids", tc.prune, tc.files...)
			if got := len(res.Errors) > 0; got != tc.wantErr {
				t.Fatalf("errors %v, want an error: %v", res.Errors, tc.wantErr)
			}
			if tc.wantErr && !strings.Contains(res.Errors[0].Error(), `dup-id.md:1: id "adr-011" is already used by decisions/adr-011.md`) {
				t.Errorf("error %q", res.Errors[0].Error())
			}
			path := scalar[string](t, pool, "SELECT source_path FROM documents WHERE slug = 'adr-011'")
			title := scalar[string](t, pool, "SELECT title FROM documents WHERE slug = 'adr-011'")
			if path != tc.wantPath || title != tc.wantTitle {
				t.Errorf("adr-011 is %s %q, want %s %q", path, title, tc.wantPath, tc.wantTitle)
			}
		})
	}
}

// A path is relative to the knowledge root: an absolute one, or one with a
// ".." element, names no file under it and is refused; "./a//b.md" is a/b.md.
// A path named twice (after cleaning) would be two files for one document.
func TestFilePathsAreCleanedOrRefused(t *testing.T) {
	t.Parallel()
	in, pool := newIngester(t)
	page := "# Page\n\nSome text.\n"
	tests := []struct {
		name    string
		paths   []string
		stored  []string // source_path and slug of each document, when accepted
		refusal string   // in the error, when refused
	}{
		{"cleaned", []string{"./a//b.md", "c/./d.md"}, []string{"a/b.md a/b", "c/d.md c/d"}, ""},
		{"cleaned sidecar pairs with its file", []string{"./s.md", "./s.md.meta.yaml"}, []string{"s.md s"}, ""},
		{"climbs out", []string{"ok.md", "../../etc/passwd.md"}, nil, `"../../etc/passwd.md" has a ".." element`},
		{"climbs back in", []string{"a/../b.md"}, nil, `"a/../b.md" has a ".." element`},
		{"climbs out, Windows separators", []string{`..\..\etc\passwd.md`}, nil, `has a ".." element`},
		{"absolute", []string{"/abs/x.md"}, nil, `"/abs/x.md" is absolute`},
		{"empty", []string{""}, nil, "every file needs a path"},
		{"named twice", []string{"x.md", "x.md"}, nil, `"x.md" is named twice in one ingest`},
		{"named twice once cleaned", []string{"y.md", "./y.md"}, nil, `"y.md" is named twice in one ingest (as "y.md" and "./y.md")`},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			project := "p" + strconv.Itoa(i)
			var files []ingest.File
			for _, p := range tc.paths {
				content := page
				if strings.HasSuffix(p, ".meta.yaml") {
					content = "tags: [x]\n"
				}
				files = append(files, file(p, content))
			}
			res, err := in.Ingest(context.Background(), files, ingest.Options{Project: project})
			var invalid *domain.InvalidError
			if tc.refusal != "" {
				if !errors.As(err, &invalid) || !strings.Contains(err.Error(), tc.refusal) {
					t.Fatalf("err = %v, want an InvalidError with %q", err, tc.refusal)
				}
				if n := scalar[int64](t, pool, "SELECT count(*) FROM projects WHERE project_key = $1", project); n != 0 {
					t.Errorf("a refused ingest created project %s", project)
				}
				return
			}
			if err != nil || len(res.Errors) > 0 {
				t.Fatalf("err %v, file errors %v", err, res.Errors)
			}
			got := queryStrings(t, pool, `SELECT d.source_path || ' ' || d.slug FROM documents d
				JOIN projects p ON p.id = d.project_id WHERE p.project_key = $1 ORDER BY 1`, project)
			if !slices.Equal(got, tc.stored) {
				t.Errorf("stored %v, want %v", got, tc.stored)
			}
		})
	}
	if n := scalar[int64](t, pool, "SELECT count(*) FROM documents WHERE tags @> ARRAY['x']"); n != 1 {
		t.Errorf("%d documents carry the cleaned sidecar's tag, want 1", n)
	}
}

// A file with no text (empty, or frontmatter alone) is stored with its title
// and said so; one with text is not.
func TestFileWithoutTextIsNoticed(t *testing.T) {
	t.Parallel()
	in, _ := newIngester(t)
	res := run(t, in, "empty", false, file("zero.md", ""), file("front.md", "---\nsummary: A stub.\n---\n"),
		file("ok.md", "# Fine\n\nA good file.\n"))
	want := []string{"front.md: no text: stored with its summary alone", "zero.md: no text: stored with its title alone"}
	var got []string
	for _, n := range res.Notices {
		if strings.Contains(n, "no text") {
			got = append(got, n)
		}
	}
	slices.Sort(got)
	if res.Created != 3 || !slices.Equal(got, want) {
		t.Errorf("created %d, notices %q, want %q", res.Created, got, want)
	}
}

// A file goes to the project its frontmatter names only when the caller may use
// that project; the operator (the CLI) may use every one.
func TestFrontmatterProjectNeedsTheCallersProject(t *testing.T) {
	t.Parallel()
	f := file("elsewhere.md", "---\nid: elsewhere\nproject: platform\n---\n# Elsewhere\n\nText.\n")
	for _, tc := range []struct {
		name    string
		who     domain.Principal
		wantErr string
	}{
		{"the operator", domain.Operator(), ""},
		{"a key for billing", domain.Principal{KeyID: "k1", Projects: []string{"billing"}, Role: domain.RoleEditor},
			`the frontmatter names project "platform", which this key may not use`},
		{"a key for both", domain.Principal{KeyID: "k2", Projects: []string{"billing", "platform"}, Role: domain.RoleEditor}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in, _ := newIngester(t)
			ctx := domain.WithPrincipal(context.Background(), tc.who)
			res, err := in.Ingest(ctx, []ingest.File{f}, ingest.Options{Project: "billing"})
			if err != nil {
				t.Fatal(err)
			}
			var got string
			if len(res.Errors) > 0 {
				got = res.Errors[0].Reason
			}
			if got != tc.wantErr {
				t.Errorf("error %q, want %q", got, tc.wantErr)
			}
			if wrote := res.Created == 1; wrote != (tc.wantErr == "") {
				t.Errorf("created %d", res.Created)
			}
		})
	}
}

// A key never replaces, un-restricts or prunes a document its access list hides
// from it; a key in the document's group, and the operator, may.
func TestHiddenDocumentsAreNotTheCallersToChange(t *testing.T) {
	t.Parallel()
	vault := file("sec/vault.md", "---\nid: vault\naccess: [sre]\n---\n# Vault rotation\n\nRotate the vault keys monthly.\n")
	open := file("open.md", "---\nid: open\n---\n# Open page\n\nEveryone reads this.\n")
	overwrite := file("sec/vault.md", "---\nid: vault\n---\n# Vault rotation\n\nOverwritten by someone who could not see it.\n")
	eng := domain.Principal{KeyID: "k1", Projects: []string{"acl"}, Role: domain.RoleEditor, Groups: []string{"eng"}}
	sre := domain.Principal{KeyID: "k2", Projects: []string{"acl"}, Role: domain.RoleEditor, Groups: []string{"sre"}}
	for _, tc := range []struct {
		name      string
		who       domain.Principal
		prune     bool
		files     []ingest.File
		wantErr   string
		wantVault string // the vault's stored title afterwards ("" once pruned)
	}{
		{"overwrite by a key outside the group", eng, false, []ingest.File{overwrite},
			`id "vault" is used by a document of project acl that this key may not see`, "Vault rotation\nRotate"},
		{"prune by a key outside the group", eng, true, []ingest.File{open}, "", "Vault rotation\nRotate"},
		{"overwrite by a key in the group", sre, false, []ingest.File{overwrite}, "", "Vault rotation\nOverwritten"},
		{"prune by the operator", domain.Operator(), true, []ingest.File{open}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in, pool := newIngester(t)
			run(t, in, "acl", false, vault, open)
			res, err := in.Ingest(domain.WithPrincipal(context.Background(), tc.who), tc.files,
				ingest.Options{Project: "acl", Prune: tc.prune})
			if err != nil {
				t.Fatal(err)
			}
			var got string
			if len(res.Errors) > 0 {
				got = res.Errors[0].Reason
			}
			if !strings.Contains(got, tc.wantErr) || (tc.wantErr == "") != (got == "") {
				t.Errorf("error %q, want %q", got, tc.wantErr)
			}
			var stored string
			err = pool.QueryRow(context.Background(), `SELECT coalesce(min(d.title || E'\n' || split_part(c.text, ' ', 1)), '')
				FROM documents d JOIN chunks c ON c.document_id = d.id AND NOT c.is_summary WHERE d.slug = 'vault'`).Scan(&stored)
			if err != nil {
				t.Fatal(err)
			}
			if stored != tc.wantVault {
				t.Errorf("vault stored as %q, want %q", stored, tc.wantVault)
			}
		})
	}
}
