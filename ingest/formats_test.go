package ingest_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/canonkb/canon/convert"
	"github.com/canonkb/canon/ingest"
	"github.com/canonkb/canon/internal/testdocs"
)

// formatFiles is one small real file of each format, a sidecar for two of them.
func formatFiles(t *testing.T) []ingest.File {
	testdocs.NeedPoppler(t)
	return []ingest.File{
		file("wiki/cache.html", "<html><head><title>Cache | wiki</title><script>evil()</script></head><body>"+
			"<nav>Home</nav><h1>Cache standard</h1><p>We use Redis 7.</p><h2>Expiry</h2><p>Five minutes.</p></body></html>"),
		file("wiki/cache.html.meta.yaml", "type: standard\nstatus: active\ntags: [cache]\n"),
		file("notes/deploys.txt", "Deploys happen on Tuesdays.\n\n- rollback first\n- then notify\n"),
		{Path: "reviews/inc-7.pdf", Content: testdocs.PDF(t, "Incident 7 review",
			[]string{"The cache failed over."}, []string{"Add a replica."})},
		{Path: "payments/retries.docx", Content: testdocs.DOCX(t,
			testdocs.Para("Title", false, "Payment retries")+testdocs.Para("Heading1", false, "Schedule")+
				testdocs.Para("", false, "Retry after one minute."), "", "")},
		file("payments/retries.docx.meta.yaml", "id: rb-retries\ntype: runbook\nowners: [dana]\n"),
	}
}

func TestEveryFormatIsIngestedAndIdempotent(t *testing.T) {
	t.Parallel()
	in, pool := newIngester(t)
	files := formatFiles(t)
	res := run(t, in, "formats", false, files...)
	if len(res.Errors) > 0 || res.Files != 4 || res.Created != 4 {
		t.Fatalf("first run: %+v", res)
	}
	got := queryStrings(t, pool, `SELECT d.slug || ' | ' || d.title || ' | ' || d.source_type || ' | ' || coalesce(d.canonical_type, '-')
		|| ' | ' || array_to_string(c.heading_path, ' > ')
		FROM documents d JOIN chunks c ON c.document_id = d.id WHERE NOT c.is_summary ORDER BY d.slug, c.ordinal`)
	want := []string{
		"notes/deploys | deploys | text | - | deploys",
		"rb-retries | Payment retries | docx | runbook | Payment retries > Schedule",
		"reviews/inc-7 | Incident 7 review | pdf | - | Incident 7 review > Page 1",
		"reviews/inc-7 | Incident 7 review | pdf | - | Incident 7 review > Page 2",
		"wiki/cache | Cache standard | html | standard | Cache standard",
		"wiki/cache | Cache standard | html | standard | Cache standard > Expiry",
	}
	if !slices.Equal(got, want) {
		t.Errorf("documents and chunks:\n got %q\nwant %q", got, want)
	}
	if n := scalar[int64](t, pool, "SELECT count(*) FROM chunks WHERE text LIKE '%evil%' OR text LIKE '%Home%'"); n != 0 {
		t.Errorf("script or navigation text stored in %d chunks", n)
	}

	// Unchanged files are not even converted: without poppler, the PDF would fail.
	before := fingerprint(t, pool)
	in.Converter.PopplerDir = t.TempDir()
	res = run(t, in, "formats", true, files...)
	if len(res.Errors) > 0 || res.Unchanged != 4 || res.Pruned != 0 {
		t.Fatalf("second run: %+v", res)
	}
	if after := fingerprint(t, pool); after != before {
		t.Errorf("an unchanged run wrote rows:\nbefore %s\nafter  %s", before, after)
	}
	in.Converter.PopplerDir = ""

	// A changed sidecar changes its document.
	files[1] = file("wiki/cache.html.meta.yaml", "type: standard\nstatus: deprecated\n")
	res = run(t, in, "formats", false, files...)
	if res.Updated != 1 || res.Unchanged != 3 {
		t.Fatalf("sidecar change: %+v", res)
	}
	if s := scalar[string](t, pool, "SELECT status FROM documents WHERE slug = 'wiki/cache'"); s != "deprecated" {
		t.Errorf("status = %s", s)
	}
}

func TestBadFilesOfEveryFormatLoseNothing(t *testing.T) {
	t.Parallel()
	in, pool := newIngester(t)
	files := formatFiles(t)
	run(t, in, "bad", false, files...)
	before := fingerprint(t, pool)

	zeros := strings.Repeat("\x00", 4<<20)
	res := run(t, in, "bad", true,
		file("wiki/cache.html", "<html><body><p>"+strings.Repeat("x", int(convert.DefaultLimits().TextFileBytes))+"</p></body></html>"),
		file("wiki/cache.html.meta.yaml", "type: standard\nstatus: active\ntags: [cache]\n"),
		file("notes/deploys.txt", "Deploys happen on Tuesdays.\n\n- rollback first\n- then notify\n"),
		file("reviews/inc-7.pdf", "%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer garbage"),
		ingest.File{Path: "payments/retries.docx", Content: testdocs.Zip(t, [2]string{"word/document.xml", zeros})},
		file("payments/retries.docx.meta.yaml", "id: rb-retries\ntype: runbook\nowners: [dana]\n"),
		file("orphan.pdf.meta.yaml", "title: x\n"),
		file("bad-sidecar.txt", "text\n"),
		file("bad-sidecar.txt.meta.yaml", "title: x\nstatus: nope\n"),
		file("notes.rst", "Title\n=====\n"),
	)
	var got []string
	for _, e := range res.Errors {
		got = append(got, e.Error())
	}
	want := []string{
		"bad-sidecar.txt.meta.yaml:2: unknown status \"nope\"; valid: draft, review, accepted, active, superseded, deprecated, archived",
		"notes.rst: unsupported file type \".rst\": canon ingests .md, .markdown, .html, .htm, .txt, .pdf, .docx (metadata goes in <file>.meta.yaml)",
		"orphan.pdf.meta.yaml: a sidecar for orphan.pdf, which is not there (name a sidecar <file>.meta.yaml)",
		"payments/retries.docx: word/document.xml expands 1027 times; the limit is 100 (a zip bomb?)",
		"reviews/inc-7.pdf: not a readable PDF: Syntax Error: Couldn't read xref table",
		"wiki/cache.html: file is over the 8 MiB limit for html files",
	}
	if !slices.Equal(got, want) {
		t.Errorf("errors:\n got %q\nwant %q", got, want)
	}
	if res.Unchanged != 1 || res.Pruned != 0 || res.Created+res.Updated != 0 {
		t.Errorf("result: %+v", res)
	}
	if after := fingerprint(t, pool); after != before {
		t.Errorf("bad files changed what was stored:\nbefore %s\nafter  %s", before, after)
	}
}

func TestReadDirsFindsEveryFormatAndSidecars(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, content := range map[string]string{
		"a.md": "# A\n", "b.HTML": "<p>b</p>", "c.txt": "c", "d.pdf": "%PDF", "e.docx": "PK", "e.docx.meta.yaml": "title: E\n",
		"f.doc": "old word", "g.yaml": "x: 1", ".hidden/h.md": "# H\n", "sub/i.htm": "<p>i</p>",
	} {
		writeFile(t, dir, name, content)
	}
	files, err := ingest.ReadDirs([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range files {
		paths = append(paths, f.Path)
	}
	slices.Sort(paths)
	want := []string{"a.md", "b.HTML", "c.txt", "d.pdf", "e.docx", "e.docx.meta.yaml", "sub/i.htm"}
	if !slices.Equal(paths, want) {
		t.Errorf("paths = %v, want %v", paths, want)
	}
	// A file named on the command line brings its sidecar.
	files, err = ingest.ReadDirs([]string{dir + "/e.docx"})
	if err != nil || len(files) != 2 || files[1].Path != "e.docx.meta.yaml" {
		t.Errorf("single file: %v %v", files, err)
	}
	// A file is read one byte past its limit, no more.
	writeFile(t, dir, "big.txt", strings.Repeat("x", int(convert.DefaultLimits().TextFileBytes)+100))
	files, _ = ingest.ReadDirs([]string{dir + "/big.txt"})
	if len(files[0].Content) != int(convert.DefaultLimits().TextFileBytes)+1 {
		t.Errorf("read %d bytes of an over-limit file", len(files[0].Content))
	}
}

func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	path := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
