package convert

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/canonkb/canon/domain"
	"github.com/canonkb/canon/markdown"
)

// section is a chunk as the tests compare it: heading path, then text.
func sections(doc *markdown.Document) [][]string {
	var out [][]string
	for _, c := range doc.Chunks {
		out = append(out, append(append([]string{}, c.HeadingPath...), c.Text))
	}
	return out
}

func convert(t *testing.T, c *Converter, path string, content []byte, sidecar *markdown.Sidecar) *markdown.Document {
	t.Helper()
	doc, err := c.Document(context.Background(), path, content, sidecar)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return doc
}

// convertErr converts a file that must fail and returns the message.
func convertErr(t *testing.T, c *Converter, path string, content []byte) string {
	t.Helper()
	doc, err := c.Document(context.Background(), path, content, nil)
	if err == nil {
		t.Fatalf("%s: want an error, got a document with %d chunks", path, len(doc.Chunks))
	}
	return err.Error()
}

func TestFormatsByExtension(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"a.md": true, "a.MARKDOWN": true, "b/c.html": true, "c.HTM": true, "d.txt": true, "e.pdf": true,
		"f.docx": true, "g.doc": false, "h.rst": false, "README": false, "a.pdf.meta.yaml": false, "x.yaml": false,
	} {
		if got := Supported(name); got != want {
			t.Errorf("Supported(%q) = %v, want %v", name, got, want)
		}
	}
	if got := SidecarOf("notes/a.pdf.meta.yaml"); got != "notes/a.pdf" {
		t.Errorf("SidecarOf = %q", got)
	}
	var c Converter
	msg := convertErr(t, &c, "notes.rst", []byte("text"))
	if !strings.Contains(msg, `unsupported file type ".rst"`) || !strings.Contains(msg, ".docx") {
		t.Errorf("unsupported: %s", msg)
	}
}

// A search's source_types filter takes a format's name as known (domain.SourceFormats).
func TestFormatsAreTheDomainsSourceFormats(t *testing.T) {
	t.Parallel()
	var names []string
	for _, f := range formats {
		names = append(names, f.name)
	}
	if want := domain.SourceFormats(); !reflect.DeepEqual(names, want) {
		t.Errorf("formats %v, domain.SourceFormats %v", names, want)
	}
}

func TestSizeLimitForEveryFormat(t *testing.T) {
	t.Parallel()
	var c Converter
	huge := []byte("<html><body><p>" + strings.Repeat("word ", int(DefaultLimits().TextFileBytes)/5) + "</p></body></html>")
	if msg := convertErr(t, &c, "huge.html", huge); msg != "file is over the 8 MiB limit for html files" {
		t.Errorf("huge HTML: %s", msg)
	}
	small := Converter{Limits: Limits{TextFileBytes: 1 << 10, BinaryFileBytes: 2 << 10}}
	for _, tt := range []struct{ path, want string }{
		{"a.md", "file is over the 1 KiB limit for markdown files"},
		{"a.txt", "file is over the 1 KiB limit for text files"},
		{"a.pdf", "file is over the 2 KiB limit for pdf files"},
		{"a.docx", "file is over the 2 KiB limit for docx files"},
	} {
		if msg := convertErr(t, &small, tt.path, make([]byte, 3<<10)); msg != tt.want {
			t.Errorf("%s: %s, want %s", tt.path, msg, tt.want)
		}
	}
	_, err := small.Document(context.Background(), "a.md", []byte("# A\n"),
		&markdown.Sidecar{Path: "a.md.meta.yaml", Content: make([]byte, 2<<10)})
	if err == nil || err.Error() != "sidecar a.md.meta.yaml is over the 1 KiB limit" {
		t.Errorf("huge sidecar: %v", err)
	}
}

func TestText(t *testing.T) {
	t.Parallel()
	var c Converter
	src := "\ufeffThe deploy window is Tuesday.\r\nIt lasts two hours.\r\n\r\n" +
		"- rollback first\n- then notify\n\n" +
		"    make deploy\n    make verify\n  \n" +
		"Last words.\n"
	doc := convert(t, &c, "ops/deploys.txt", []byte(src), nil)
	want := [][]string{{"deploys", "The deploy window is Tuesday. It lasts two hours.\n\n- rollback first\n- then notify\n\n```\n    make deploy\n    make verify\n```\n\nLast words."}}
	if got := sections(doc); !reflect.DeepEqual(got, want) {
		t.Errorf("chunks:\n got %q\nwant %q", got, want)
	}
	if doc.Slug != "ops/deploys" || doc.SourceType != "text" || doc.Summary != "The deploy window is Tuesday. It lasts two hours." {
		t.Errorf("document: %+v", doc)
	}
	_, err := c.Document(context.Background(), "bad.txt", []byte("fine\nnot \xff fine\n"), nil)
	var pe *markdown.ParseError
	if !errors.As(err, &pe) || err.Error() != "bad.txt:2: invalid UTF-8: byte 0xff at column 5" {
		t.Errorf("invalid UTF-8: %v", err)
	}
}

func TestSidecarGivesMetadata(t *testing.T) {
	t.Parallel()
	var c Converter
	doc := convert(t, &c, "ops/deploys.txt", []byte("Deploys happen on Tuesday.\n"), &markdown.Sidecar{
		Path: "ops/deploys.txt.meta.yaml", Content: []byte("id: rb-deploys\ntitle: Deploy runbook\ntype: runbook\nstatus: active\n"),
	})
	if doc.Slug != "rb-deploys" || doc.Title != "Deploy runbook" || doc.CanonicalType != "runbook" || doc.Status != "active" {
		t.Errorf("document: %+v", doc)
	}
	_, err := c.Document(context.Background(), "ops/deploys.txt", []byte("x\n"), &markdown.Sidecar{
		Path: "ops/deploys.txt.meta.yaml", Content: []byte("title: a\nstatus: finished\n"),
	})
	if err == nil || !strings.HasPrefix(err.Error(), `ops/deploys.txt.meta.yaml:2: unknown status "finished"`) {
		t.Errorf("bad sidecar: %v", err)
	}
}
