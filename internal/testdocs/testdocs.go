// Package testdocs writes small real documents for tests: PDFs (with a Go PDF
// writer) and DOCX zips, so the converters are tested on the files they will
// meet, generated in the test rather than stored.
package testdocs

import (
	"archive/zip"
	"bytes"
	"os"
	"os/exec"
	"testing"

	"github.com/go-pdf/fpdf"
)

// PDF writes a PDF whose pages hold the given paragraphs (a page without any
// has no text layer), with a Title property unless title is "".
func PDF(t testing.TB, title string, pages ...[]string) []byte {
	t.Helper()
	pdf := fpdf.New("P", "mm", "A4", "")
	if title != "" {
		pdf.SetTitle(title, true)
	}
	pdf.SetFont("Helvetica", "", 12)
	for _, paras := range pages {
		pdf.AddPage()
		for _, p := range paras {
			pdf.MultiCell(0, 6, p, "", "L", false)
			pdf.Ln(6)
		}
	}
	var b bytes.Buffer
	if err := pdf.Output(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// NeedPoppler skips a test that needs pdftotext where it is missing, except
// under CI, where the Makefile has installed it and its absence is a failure.
func NeedPoppler(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("pdftotext"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("pdftotext is missing (make test installs poppler-utils)")
		}
		t.Skip("pdftotext is missing: apt-get install poppler-utils")
	}
}

const wordNS = `xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"`

// Para is a DOCX paragraph (w:p) with an optional style id and list marker.
func Para(style string, list bool, text string) string {
	var ppr string
	if style != "" {
		ppr += `<w:pStyle w:val="` + style + `"/>`
	}
	if list {
		ppr += `<w:numPr><w:ilvl w:val="0"/><w:numId w:val="1"/></w:numPr>`
	}
	if ppr != "" {
		ppr = "<w:pPr>" + ppr + "</w:pPr>"
	}
	return `<w:p>` + ppr + `<w:r><w:t xml:space="preserve">` + text + `</w:t></w:r></w:p>`
}

// Zip writes a zip of the given (name, content) parts, in order.
func Zip(t testing.TB, parts ...[2]string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, p := range parts {
		w, err := zw.Create(p[0])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(p[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// DOCX writes a minimal Word document: body is the XML inside w:body (see
// Para), styles the w:style elements of word/styles.xml (no part if ""),
// title the dc:title of docProps/core.xml (no part if "").
func DOCX(t testing.TB, body, styles, title string) []byte {
	t.Helper()
	parts := [][2]string{
		{"[Content_Types].xml", `<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>`},
		{"word/document.xml", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document ` + wordNS + `><w:body>` + body + `</w:body></w:document>`},
	}
	if styles != "" {
		parts = append(parts, [2]string{"word/styles.xml", `<?xml version="1.0"?><w:styles ` + wordNS + `>` + styles + `</w:styles>`})
	}
	if title != "" {
		parts = append(parts, [2]string{"docProps/core.xml", `<?xml version="1.0"?><cp:coreProperties ` +
			`xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" ` +
			`xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>` + title + `</dc:title></cp:coreProperties>`})
	}
	return Zip(t, parts...)
}
