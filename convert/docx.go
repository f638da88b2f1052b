package convert

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/canonkb/canon/markdown"
)

// Parts of a DOCX package that canon reads; the others (images, headers,
// footnotes, comments) are not the document's body.
const (
	docxBody   = "word/document.xml"
	docxStyles = "word/styles.xml"
	docxCore   = "docProps/core.xml"
)

// ratioFloor is the part size below which expansion is not checked: small
// XML parts compress very well and cannot hurt.
const ratioFloor = 1 << 20

// convertDOCX reads a Word document: paragraphs whose style is Title or
// Heading N (by style name, or an outline level) make the heading path
// (Title is level 1, Heading N is level N+1, so Heading 1 sections sit under
// the title); list paragraphs keep their lines; tables become "cell | cell"
// lines. The title is the Title paragraph, else the document's title property.
// The zip is bounded: entries, each part's size and expansion.
func convertDOCX(_ context.Context, c *Converter, _ string, content []byte) (*markdown.Outline, error) {
	limits := c.Limits.withDefaults()
	zr, err := zip.NewReader(bytes.NewReader(content), int64(len(content)))
	if err != nil {
		return nil, fmt.Errorf("not a DOCX file (a DOCX is a zip archive): %w", err)
	}
	if len(zr.File) > limits.ZipEntries {
		return nil, fmt.Errorf("the DOCX zip has %d entries; the limit is %d (a zip bomb?)", len(zr.File), limits.ZipEntries)
	}
	body, err := readPart(zr, docxBody, limits)
	if err != nil {
		return nil, err
	}
	if body == nil {
		return nil, fmt.Errorf("not a DOCX file: no %s in the zip", docxBody)
	}
	stylesXML, err := readPart(zr, docxStyles, limits)
	if err != nil {
		return nil, err
	}
	coreXML, err := readPart(zr, docxCore, limits)
	if err != nil {
		return nil, err
	}
	styles, err := readStyles(stylesXML)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", docxStyles, err)
	}
	r := docxReader{styles: styles}
	if err := r.read(body); err != nil {
		return nil, fmt.Errorf("%s: %w", docxBody, err)
	}
	r.o.Title = coreTitle(coreXML)
	return &r.o, nil
}

// readPart reads one part of the zip, or nil when the zip lacks it.
func readPart(zr *zip.Reader, name string, limits Limits) ([]byte, error) {
	var f *zip.File
	for _, e := range zr.File {
		if e.Name == name {
			f = e
			break
		}
	}
	if f == nil {
		return nil, nil
	}
	tooBig := fmt.Errorf("%s expands to more than %s (a zip bomb?)", name, size(limits.ExtractedBytes))
	if f.UncompressedSize64 > uint64(limits.ExtractedBytes) {
		return nil, tooBig
	}
	if f.UncompressedSize64 > ratioFloor && f.CompressedSize64 > 0 && f.UncompressedSize64/f.CompressedSize64 > uint64(limits.ZipRatio) {
		return nil, fmt.Errorf("%s expands %d times; the limit is %d (a zip bomb?)",
			name, f.UncompressedSize64/f.CompressedSize64, limits.ZipRatio)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("corrupt DOCX: %s: %w", name, err)
	}
	defer rc.Close()
	// The sizes above are what the zip declares; the reader stops at the limit
	// whatever it declared.
	b, err := io.ReadAll(io.LimitReader(rc, limits.ExtractedBytes+1))
	if err != nil {
		return nil, fmt.Errorf("corrupt DOCX: %s: %w", name, err)
	}
	if int64(len(b)) > limits.ExtractedBytes {
		return nil, tooBig
	}
	return b, nil
}

var headingNameRe = regexp.MustCompile(`^heading\s*([1-9])$`)

// docxStyle is what a paragraph style says about headings.
type docxStyle struct {
	name, basedOn string
	outline       int // outline level + 1, 0 for none
}

// readStyles maps style ids to styles.
func readStyles(b []byte) (map[string]docxStyle, error) {
	styles := map[string]docxStyle{}
	if b == nil {
		return styles, nil
	}
	dec := xml.NewDecoder(bytes.NewReader(b))
	var id string
	var cur docxStyle
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return styles, nil
		}
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "style":
				id, cur = wordAttr(t, "styleId"), docxStyle{}
			case "name":
				cur.name = wordAttr(t, "val")
			case "basedOn":
				cur.basedOn = wordAttr(t, "val")
			case "outlineLvl":
				if n, err := strconv.Atoi(wordAttr(t, "val")); err == nil && n < 9 {
					cur.outline = n + 1
				}
			}
		case xml.EndElement:
			if t.Name.Local == "style" && id != "" {
				styles[id] = cur
			}
		}
	}
}

// headingLevel is the outline level of a paragraph style: 1 for Title, N+1
// for Heading N (by name, or by outline level through the styles it is based
// on), 0 for body text.
func headingLevel(styles map[string]docxStyle, id string) int {
	for hops := 0; id != "" && hops < 10; hops++ {
		s, ok := styles[id]
		if !ok {
			s = docxStyle{name: id} // no styles part: the id is the name ("Heading1")
		}
		name := strings.ToLower(strings.TrimSpace(s.name))
		if name == "title" {
			return 1
		}
		if m := headingNameRe.FindStringSubmatch(name); m != nil {
			n, _ := strconv.Atoi(m[1])
			return n + 1
		}
		if s.outline > 0 {
			return s.outline + 1
		}
		id = s.basedOn
	}
	return 0
}

// docxParagraph is a paragraph being read.
type docxParagraph struct {
	text    strings.Builder
	style   string
	outline int // direct outline level + 1
	list    bool
}

// docxReader walks document.xml.
type docxReader struct {
	styles map[string]docxStyle
	o      markdown.Outline
	paras  []*docxParagraph // open paragraphs (a text box nests one in another)
	inText bool
	list   []string // consecutive list paragraphs
	// Tables: rows of the outermost table; a nested table's text goes into the
	// outer cell.
	tables int
	row    []string
	cell   strings.Builder
	rows   []string
}

func (r *docxReader) read(b []byte) error {
	dec := xml.NewDecoder(bytes.NewReader(b))
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			r.endList()
			return nil
		}
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			r.start(t)
		case xml.EndElement:
			r.end(t)
		case xml.CharData:
			if r.inText && len(r.paras) > 0 {
				r.paras[len(r.paras)-1].text.Write(t)
			}
		}
	}
}

func (r *docxReader) top() *docxParagraph {
	if len(r.paras) == 0 {
		return nil
	}
	return r.paras[len(r.paras)-1]
}

func (r *docxReader) start(t xml.StartElement) {
	p := r.top()
	switch t.Name.Local {
	case "p":
		r.paras = append(r.paras, &docxParagraph{})
	case "pStyle":
		if p != nil {
			p.style = wordAttr(t, "val")
		}
	case "outlineLvl":
		if n, err := strconv.Atoi(wordAttr(t, "val")); p != nil && err == nil && n < 9 {
			p.outline = n + 1
		}
	case "numPr":
		if p != nil {
			p.list = true
		}
	case "t":
		r.inText = true
	case "tab":
		if p != nil {
			p.text.WriteString(" ")
		}
	case "br", "cr":
		if p != nil {
			p.text.WriteString("\n")
		}
	case "tbl":
		if r.tables == 0 {
			r.endList()
		}
		r.tables++
	case "tr":
		if r.tables == 1 {
			r.row = nil
		}
	case "tc":
		if r.tables == 1 {
			r.cell.Reset()
		}
	}
}

func (r *docxReader) end(t xml.EndElement) {
	switch t.Name.Local {
	case "t":
		r.inText = false
	case "p":
		p := r.top()
		if p == nil {
			return
		}
		r.paras = r.paras[:len(r.paras)-1]
		r.paragraph(p)
	case "tc":
		if r.tables == 1 {
			r.row = append(r.row, strings.Join(strings.Fields(r.cell.String()), " "))
		}
	case "tr":
		if r.tables == 1 && strings.TrimSpace(strings.Join(r.row, "")) != "" {
			r.rows = append(r.rows, strings.Join(r.row, " | "))
		}
	case "tbl":
		r.tables--
		if r.tables == 0 {
			r.o.Lines(r.rows)
			r.rows = nil
		}
	}
}

// paragraph places a finished paragraph: in a table cell, a list, a heading or prose.
func (r *docxReader) paragraph(p *docxParagraph) {
	text := collapse(p.text.String())
	if r.tables > 0 {
		r.cell.WriteString(" " + text)
		return
	}
	if text == "" {
		return
	}
	level := headingLevel(r.styles, p.style)
	if level == 0 && p.outline > 0 {
		level = p.outline + 1
	}
	switch {
	case level > 0:
		r.endList()
		heading := strings.Join(strings.Fields(text), " ")
		r.o.Heading(level, heading)
	case p.list:
		r.list = append(r.list, "- "+strings.Join(strings.Fields(text), " "))
	default:
		r.endList()
		r.o.Paragraph(text)
	}
}

func (r *docxReader) endList() {
	if len(r.list) > 0 {
		r.o.Lines(r.list)
		r.list = nil
	}
}

// wordAttr reads an attribute by local name (w:val, w:styleId).
func wordAttr(t xml.StartElement, local string) string {
	for _, a := range t.Attr {
		if a.Name.Local == local {
			return a.Value
		}
	}
	return ""
}

// coreTitle reads dc:title from docProps/core.xml.
func coreTitle(b []byte) string {
	if b == nil {
		return ""
	}
	var core struct {
		Title string `xml:"http://purl.org/dc/elements/1.1/ title"`
	}
	if err := xml.Unmarshal(b, &core); err != nil {
		return ""
	}
	return strings.Join(strings.Fields(core.Title), " ")
}
