package convert

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"fmt"
	"hash/crc32"
	"reflect"
	"strings"
	"testing"

	"github.com/canonkb/canon/internal/testdocs"
)

func TestDOCX(t *testing.T) {
	t.Parallel()
	var c Converter
	styles := `<w:style w:type="paragraph" w:styleId="Titel"><w:name w:val="Title"/></w:style>` +
		`<w:style w:type="paragraph" w:styleId="berschrift1"><w:name w:val="heading 1"/></w:style>` +
		`<w:style w:type="paragraph" w:styleId="MyHeading"><w:name w:val="Custom"/><w:basedOn w:val="Outline2"/></w:style>` +
		`<w:style w:type="paragraph" w:styleId="Outline2"><w:name w:val="Outline"/><w:pPr><w:outlineLvl w:val="1"/></w:pPr></w:style>`
	body := testdocs.Para("Titel", false, "Payment retries") +
		testdocs.Para("", false, "Retries follow the &lt;backoff&gt; policy.") +
		testdocs.Para("berschrift1", false, "Schedule") +
		testdocs.Para("", true, "first retry after 1 minute") +
		testdocs.Para("", true, "second after 10 minutes") +
		testdocs.Para("MyHeading", false, "Limits") +
		`<w:p><w:r><w:t>Never more</w:t></w:r><w:r><w:tab/><w:t>than five.</w:t></w:r><w:r><w:delText>deleted</w:delText></w:r></w:p>` +
		`<w:tbl><w:tr><w:tc>` + testdocs.Para("", false, "Card") + `</w:tc><w:tc>` + testdocs.Para("", false, "5") + `</w:tc></w:tr>` +
		`<w:tr><w:tc>` + testdocs.Para("", false, "SEPA") + `</w:tc><w:tc>` + testdocs.Para("", false, "3") + testdocs.Para("", false, "(weekdays)") + `</w:tc></w:tr></w:tbl>`
	doc := convert(t, &c, "payments/retries.docx", testdocs.DOCX(t, body, styles, "Core title"), nil)
	want := [][]string{
		{"Payment retries", "Retries follow the <backoff> policy."},
		{"Payment retries", "Schedule", "- first retry after 1 minute\n- second after 10 minutes"},
		{"Payment retries", "Schedule", "Limits", "Never more than five.\n\nCard | 5\nSEPA | 3 (weekdays)"},
	}
	if got := sections(doc); !reflect.DeepEqual(got, want) {
		t.Errorf("chunks:\n got %q\nwant %q", got, want)
	}
	if doc.Title != "Payment retries" || doc.SourceType != "docx" || doc.Slug != "payments/retries" {
		t.Errorf("document: %+v", doc)
	}

	// No styles part: the style ids name the headings; no Title paragraph:
	// the title property titles the document and starts the paths.
	doc = convert(t, &c, "b.docx", testdocs.DOCX(t, testdocs.Para("Heading1", false, "Scope")+testdocs.Para("", false, "All services."), "", "Core title"), nil)
	want = [][]string{{"Core title", "Scope", "All services."}}
	if got := sections(doc); doc.Title != "Core title" || !reflect.DeepEqual(got, want) {
		t.Errorf("title %q, chunks %q", doc.Title, got)
	}
}

func TestBadDOCX(t *testing.T) {
	t.Parallel()
	var c Converter
	zeros := strings.Repeat("\x00", 4<<20)
	var many [][2]string
	for i := range DefaultLimits().ZipEntries + 1 {
		many = append(many, [2]string{fmt.Sprintf("f%d", i), ""})
	}
	for _, tt := range []struct {
		name    string
		content []byte
		want    string
	}{
		{"not a zip", []byte("PK? no"), "not a DOCX file (a DOCX is a zip archive): zip: not a valid zip file"},
		{"no document part", testdocs.Zip(t, [2]string{"word/other.xml", "<x/>"}), "not a DOCX file: no word/document.xml in the zip"},
		{"zip bomb", testdocs.Zip(t, [2]string{"word/document.xml", zeros}), "word/document.xml expands "},
		{"too many entries", testdocs.Zip(t, many...), "the DOCX zip has 5001 entries; the limit is 5000 (a zip bomb?)"},
		{"lying sizes", lyingZip(t, "word/document.xml", zeros), "corrupt DOCX: word/document.xml: zip: "},
		{"broken XML", testdocs.DOCX(t, "<w:p><w:r><w:t>open", "", ""), "word/document.xml: XML syntax error"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if msg := convertErr(t, &c, "bad.docx", tt.content); !strings.HasPrefix(msg, tt.want) {
				t.Errorf("got  %s\nwant %s…", msg, tt.want)
			}
		})
	}
	// A part over the size limit, however well it compresses.
	small := Converter{Limits: Limits{ExtractedBytes: 1 << 20}}
	big := testdocs.DOCX(t, strings.Repeat(testdocs.Para("", false, "Some words that repeat."), 30000), "", "")
	if msg := convertErr(t, &small, "big.docx", big); msg != "word/document.xml expands to more than 1 MiB (a zip bomb?)" {
		t.Errorf("size limit: %s", msg)
	}
}

// lyingZip stores a deflated part whose header claims it expands to 100 bytes.
func lyingZip(t *testing.T, name, content string) []byte {
	t.Helper()
	var raw bytes.Buffer
	fw, _ := flate.NewWriter(&raw, flate.BestCompression)
	if _, err := fw.Write([]byte(content)); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, err := zw.CreateRaw(&zip.FileHeader{Name: name, Method: zip.Deflate, CRC32: crc32.ChecksumIEEE([]byte(content)),
		CompressedSize64: uint64(raw.Len()), UncompressedSize64: 100})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(raw.Bytes()); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
