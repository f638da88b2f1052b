package markdown

import "strings"

// Outline is a document's text as headed sections of blocks. The Markdown body
// parser fills one, and so do the converters of other formats (package
// convert), so every format is chunked, titled and summarised the same way.
type Outline struct {
	// Title is the title the format itself declares (HTML <title>, the title
	// property of a DOCX or PDF): used when the metadata names none and there is
	// no level-1 heading.
	Title string

	sections  []section
	stack     []headingLevel
	h1        string
	firstPara string
}

type headingLevel struct {
	level int
	text  string
}

// Heading starts a section. Level 1 is a title heading (Markdown "#", HTML
// <h1>, a DOCX Title paragraph): the first one titles the document, and a
// section under one has a heading path that starts with it. Deeper levels nest
// under the closest shallower heading.
func (o *Outline) Heading(level int, text string) {
	text = cleanText(sanitizeMarks(text))
	if level == 1 && o.h1 == "" {
		o.h1 = text
	}
	for len(o.stack) > 0 && o.stack[len(o.stack)-1].level >= level {
		o.stack = o.stack[:len(o.stack)-1]
	}
	o.stack = append(o.stack, headingLevel{level, text})
	s := section{underH1: o.stack[0].level == 1 && o.stack[0].text != ""}
	for _, l := range o.stack {
		if l.text != "" {
			s.path = append(s.path, l.text)
		}
	}
	o.sections = append(o.sections, s)
}

// Paragraph adds prose, split between sentences when it is longer than a
// chunk. The first paragraph is the document's default summary.
func (o *Outline) Paragraph(text string) { o.paragraph(sanitizeMarks(text), true) }

// Lines adds a list, a table or other text whose lines belong together, split
// between lines when it is longer than a chunk.
func (o *Outline) Lines(lines []string) {
	o.add(block{kind: linesBlock, lines: sanitizeLines(cleanLines(lines))})
}

// Code adds preformatted text, fenced with ``` (and lang) in every chunk.
func (o *Outline) Code(lines []string, lang string) {
	o.add(block{kind: codeBlock, lines: sanitizeLines(cleanLines(lines)), lang: cleanText(sanitizeMarks(lang))})
}

// paragraph adds prose; top is false for prose nested in a quote, which is
// never the summary.
func (o *Outline) paragraph(text string, top bool) {
	text = cleanText(text)
	if text == "" {
		return
	}
	o.add(block{kind: proseBlock, text: text})
	if top && o.firstPara == "" {
		o.firstPara = text
	}
}

func (o *Outline) add(b block) {
	if b.kind != proseBlock && len(b.lines) == 0 {
		return
	}
	if len(o.sections) == 0 {
		o.sections = []section{{}}
	}
	s := &o.sections[len(o.sections)-1]
	s.blocks = append(s.blocks, b)
}

// cleanText makes converter output storable: PostgreSQL text holds neither
// NUL bytes nor invalid UTF-8 (a Markdown file with either is rejected before).
func cleanText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.TrimSpace(strings.ReplaceAll(s, "\x00", ""))
}

// cleanLines cleans each line, keeping inner blank lines but not leading or
// trailing ones.
func cleanLines(lines []string) []string {
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		l = strings.TrimRight(strings.ToValidUTF8(strings.ReplaceAll(l, "\x00", ""), "\uFFFD"), " \t\r\n")
		out = append(out, l)
	}
	for len(out) > 0 && strings.TrimSpace(out[0]) == "" {
		out = out[1:]
	}
	for len(out) > 0 && strings.TrimSpace(out[len(out)-1]) == "" {
		out = out[:len(out)-1]
	}
	return out
}
