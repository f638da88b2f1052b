package convert

import (
	"reflect"
	"strings"
	"testing"

	"github.com/canonkb/canon/internal/testdocs"
)

func TestPDF(t *testing.T) {
	t.Parallel()
	testdocs.NeedPoppler(t)
	var c Converter
	pdf := testdocs.PDF(t, "Incident review 2024-07",
		[]string{"The cache cluster failed over at 03:12.", "Latency rose for nine minutes."},
		[]string{},
		[]string{"Action items: add a second replica."})
	doc := convert(t, &c, "reviews/inc-2024-07.pdf", pdf, nil)
	want := [][]string{
		{"Incident review 2024-07", "Page 1", "The cache cluster failed over at 03:12. Latency rose for nine minutes."},
		{"Incident review 2024-07", "Page 3", "Action items: add a second replica."},
	}
	if got := sections(doc); !reflect.DeepEqual(got, want) {
		t.Errorf("chunks:\n got %q\nwant %q", got, want)
	}
	if doc.Slug != "reviews/inc-2024-07" || doc.SourceType != "pdf" || doc.Summary != "The cache cluster failed over at 03:12. Latency rose for nine minutes." {
		t.Errorf("document: %+v", doc)
	}
	// Without a Title property, the file name.
	doc = convert(t, &c, "notes.pdf", testdocs.PDF(t, "", []string{"Hello."}), nil)
	if doc.Title != "notes" || !reflect.DeepEqual(doc.Chunks[0].HeadingPath, []string{"notes", "Page 1"}) {
		t.Errorf("untitled: %q %q", doc.Title, doc.Chunks[0].HeadingPath)
	}
}

func TestBadPDFs(t *testing.T) {
	t.Parallel()
	testdocs.NeedPoppler(t)
	var c Converter
	good := testdocs.PDF(t, "x", []string{"Some text."})
	for _, tt := range []struct {
		name    string
		content []byte
		want    string
	}{
		{"not a PDF", []byte("this is not a PDF at all"), "not a readable PDF: "},
		{"truncated", good[:len(good)/3], "not a readable PDF: "},
		{"no text layer", testdocs.PDF(t, "scan", []string{}), "the PDF has no text layer (a scanned document? canon does not run OCR)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if msg := convertErr(t, &c, "bad.pdf", tt.content); !strings.HasPrefix(msg, tt.want) {
				t.Errorf("got %s, want %s…", msg, tt.want)
			}
		})
	}
	small := Converter{Limits: Limits{ExtractedBytes: 8}}
	if msg := convertErr(t, &small, "big.pdf", good); msg != "the PDF yields more than 8 bytes of text" {
		t.Errorf("text limit: %s", msg)
	}
}

func TestPDFWithoutPoppler(t *testing.T) {
	t.Parallel()
	c := Converter{PopplerDir: t.TempDir()}
	if msg := convertErr(t, &c, "a.pdf", []byte("%PDF-1.4")); msg != errNoPoppler.Error() {
		t.Errorf("got %s", msg)
	}
}
