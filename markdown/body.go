package markdown

import (
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// markdownParser is shared: goldmark keeps per-parse state in a parser.Context.
var markdownParser = goldmark.New(goldmark.WithExtensions(
	extension.Table, extension.Strikethrough, extension.TaskList,
)).Parser()

type blockKind int

const (
	proseBlock blockKind = iota // a paragraph: split between sentences
	linesBlock                  // a list, table or HTML block: split between lines
	codeBlock                   // a code block: split between lines, fenced again in each chunk
)

// block is one unit of a section's plain text.
type block struct {
	kind  blockKind
	text  string   // proseBlock
	lines []string // linesBlock, codeBlock
	lang  string   // codeBlock
}

// section is the text under one heading.
type section struct {
	path    []string // heading texts, outermost first
	underH1 bool     // path starts with an H1
	blocks  []block
}

// wikiRef is a [[target]] or [[target|label]] of the body.
type wikiRef struct {
	target string // normalised slug
	raw    string // the link as written, for messages
	line   int
}

// bodyParser turns the Markdown body into sections of plain text.
type bodyParser struct {
	src       []byte
	firstLine int   // file line of src[0]
	newlines  []int // offsets of '\n' in src

	outline Outline
	links   []wikiRef
}

func parseBody(src []byte, firstLine int) *bodyParser {
	p := &bodyParser{src: src, firstLine: firstLine}
	for i, c := range src {
		if c == '\n' {
			p.newlines = append(p.newlines, i)
		}
	}
	root := markdownParser.Parse(text.NewReader(src))
	p.blocks(root, true)
	return p
}

// line is the file line of a byte offset in the body.
func (p *bodyParser) line(off int) int {
	return p.firstLine + sort.SearchInts(p.newlines, off)
}

func (p *bodyParser) add(b block) { p.outline.add(b) }

// blocks walks block children; headings start sections only at the top level
// (a heading inside a quote or list is text).
func (p *bodyParser) blocks(n ast.Node, top bool) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch c := c.(type) {
		case *ast.Heading:
			if top {
				// A heading path is shown as written: its links are not read as titles.
				p.outline.Heading(c.Level, plainText(p.inline(c, false)))
			} else {
				p.outline.paragraph(p.inline(c, false), false)
			}
		case *ast.Paragraph, *ast.TextBlock:
			p.outline.paragraph(p.inline(c, true), top)
		case *ast.Blockquote:
			p.blocks(c, false)
		case *ast.FencedCodeBlock:
			if lines := codeLines(c, p.src); len(lines) > 0 {
				p.add(block{kind: codeBlock, lines: lines, lang: string(c.Language(p.src))})
			}
		case *ast.CodeBlock:
			if lines := codeLines(c, p.src); len(lines) > 0 {
				p.add(block{kind: codeBlock, lines: lines})
			}
		case *ast.ThematicBreak:
		default:
			if lines := p.lines(c, ""); len(lines) > 0 {
				p.add(block{kind: linesBlock, lines: lines})
			}
		}
	}
}

// lines renders a nested block as lines of text, each prefixed by indent.
func (p *bodyParser) lines(n ast.Node, indent string) []string {
	var out []string
	addText := func(t string) {
		for _, l := range strings.Split(t, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				out = append(out, indent+l)
			}
		}
	}
	switch n := n.(type) {
	case *ast.Paragraph, *ast.TextBlock, *ast.Heading:
		addText(p.inline(n, true))
	case *ast.FencedCodeBlock, *ast.CodeBlock:
		lang := ""
		if f, ok := n.(*ast.FencedCodeBlock); ok {
			lang = string(f.Language(p.src))
		}
		if code := codeLines(n, p.src); len(code) > 0 {
			out = append(out, indent+"```"+lang)
			for _, l := range code {
				out = append(out, indent+l)
			}
			out = append(out, indent+"```")
		}
	case *ast.List:
		num := n.Start
		for item := n.FirstChild(); item != nil; item = item.NextSibling() {
			marker := "- "
			if n.IsOrdered() {
				marker = strconv.Itoa(num) + ". "
				num++
			}
			var itemLines []string
			for c := item.FirstChild(); c != nil; c = c.NextSibling() {
				itemLines = append(itemLines, p.lines(c, indent+strings.Repeat(" ", len(marker)))...)
			}
			if len(itemLines) == 0 {
				continue
			}
			itemLines[0] = indent + marker + strings.TrimLeft(itemLines[0], " ")
			out = append(out, itemLines...)
		}
	case *east.Table:
		for row := n.FirstChild(); row != nil; row = row.NextSibling() {
			var cells []string
			empty := true
			for cell := row.FirstChild(); cell != nil; cell = cell.NextSibling() {
				t := strings.ReplaceAll(p.inline(cell, true), "\n", " ")
				cells = append(cells, t)
				empty = empty && t == ""
			}
			if !empty {
				out = append(out, indent+strings.Join(cells, cellSeparator))
			}
		}
	case *ast.HTMLBlock:
		var b strings.Builder
		for i := 0; i < n.Lines().Len(); i++ {
			seg := n.Lines().At(i)
			b.Write(seg.Value(p.src))
		}
		if n.HasClosure() {
			b.Write(n.ClosureLine.Value(p.src))
		}
		addText(stripHTML(b.String()))
	case *ast.ThematicBreak:
	default:
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			out = append(out, p.lines(c, indent)...)
		}
	}
	return out
}

var (
	htmlCommentRe = regexp.MustCompile(`(?s)<!--.*?-->`)
	htmlTagRe     = regexp.MustCompile(`<[^>]*>`)
)

func stripHTML(s string) string {
	s = htmlCommentRe.ReplaceAllString(s, "")
	s = htmlTagRe.ReplaceAllString(s, "")
	return string(util.ResolveNumericReferences(util.ResolveEntityNames([]byte(s))))
}

// codeLines are a code block's lines, trailing blank lines dropped.
func codeLines(n ast.Node, src []byte) []string {
	var out []string
	for i := 0; i < n.Lines().Len(); i++ {
		seg := n.Lines().At(i)
		out = append(out, strings.TrimRight(string(seg.Value(src)), "\n"))
	}
	for len(out) > 0 && strings.TrimSpace(out[len(out)-1]) == "" {
		out = out[:len(out)-1]
	}
	return out
}

// run is a piece of inline text: Markdown text still to unescape and scan for
// wikilinks, or literal text (code, URLs).
type run struct {
	text    string
	off     int // source offset, -1 if none
	literal bool
}

// inline renders a node's inline content as plain text: emphasis and link
// syntax dropped, code spans kept (with backticks when ticks is set), absolute
// link URLs kept after the link text, wikilinks replaced by their label and
// recorded (marked: see writeLink).
func (p *bodyParser) inline(n ast.Node, ticks bool) string {
	var runs []run
	p.inlineRuns(n, ticks, &runs)
	var out strings.Builder
	for i := 0; i < len(runs); {
		if runs[i].literal {
			out.WriteString(runs[i].text)
			i++
			continue
		}
		var raw strings.Builder
		var starts, offs []int
		for ; i < len(runs) && !runs[i].literal; i++ {
			starts = append(starts, raw.Len())
			offs = append(offs, runs[i].off)
			raw.WriteString(runs[i].text)
		}
		p.wikilinks(raw.String(), starts, offs, &out)
	}
	return strings.TrimSpace(out.String())
}

func (p *bodyParser) inlineRuns(n ast.Node, ticks bool, runs *[]run) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch c := c.(type) {
		case *ast.Text:
			*runs = append(*runs, run{text: string(c.Segment.Value(p.src)), off: c.Segment.Start, literal: c.IsRaw()})
			if c.HardLineBreak() {
				*runs = append(*runs, run{text: "\n", off: -1, literal: true})
			} else if c.SoftLineBreak() {
				*runs = append(*runs, run{text: " ", off: -1, literal: true})
			}
		case *ast.String:
			*runs = append(*runs, run{text: string(c.Value), off: -1, literal: true})
		case *ast.CodeSpan:
			var b strings.Builder
			for t := c.FirstChild(); t != nil; t = t.NextSibling() {
				if t, ok := t.(*ast.Text); ok {
					v := string(t.Segment.Value(p.src))
					if strings.HasSuffix(v, "\n") {
						v = v[:len(v)-1] + " "
					}
					b.WriteString(v)
				}
			}
			code := b.String()
			if ticks {
				code = "`" + code + "`"
			}
			*runs = append(*runs, run{text: code, off: -1, literal: true})
		case *ast.Link:
			p.inlineRuns(c, ticks, runs)
			if dest := string(c.Destination); isAbsoluteURL(dest) {
				*runs = append(*runs, run{text: " (" + dest + ")", off: -1, literal: true})
			}
		case *ast.AutoLink:
			*runs = append(*runs, run{text: string(c.Label(p.src)), off: -1, literal: true})
		case *ast.RawHTML:
		case *east.TaskCheckBox:
			box := "[ ] "
			if c.IsChecked {
				box = "[x] "
			}
			*runs = append(*runs, run{text: box, off: -1, literal: true})
		default:
			p.inlineRuns(c, ticks, runs)
		}
	}
}

func isAbsoluteURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// wikiRe matches [[target]], [[target|label]] and [[target#section|label]].
var wikiRe = regexp.MustCompile(`\[\[([^\[\]\n]+)\]\]`)

// wikilinks writes raw Markdown text unescaped, with each wikilink replaced by
// its label (or its target as written) between marks (writeLink), and records
// the links. starts and offs map positions of raw to
// source offsets, run by run.
func (p *bodyParser) wikilinks(raw string, starts, offs []int, out *strings.Builder) {
	last := 0
	for _, m := range wikiRe.FindAllStringSubmatchIndex(raw, -1) {
		out.WriteString(unescape(raw[last:m[0]]))
		inner := raw[m[2]:m[3]]
		target, label, hasLabel := strings.Cut(inner, "|")
		target = strings.TrimSuffix(target, `\`) // "[[a\|b]]" inside a table
		if !hasLabel {
			label = target
		}
		label = unescape(strings.TrimSpace(label))
		slug, _, _ := strings.Cut(target, "#")
		if slug = NormalizeSlug(unescape(slug)); slug == "" {
			out.WriteString(label)
		} else {
			writeLink(out, label, slug, hasLabel)
			k := sort.SearchInts(starts, m[0]+1) - 1
			for k > 0 && offs[k] < 0 {
				k--
			}
			line := p.firstLine
			if k >= 0 && offs[k] >= 0 {
				line = p.line(offs[k])
			}
			p.links = append(p.links, wikiRef{target: slug, raw: raw[m[0]:m[1]], line: line})
		}
		last = m[1]
	}
	out.WriteString(unescape(raw[last:]))
}

func unescape(s string) string {
	if !strings.ContainsAny(s, `\&`) {
		return s
	}
	b := util.UnescapePunctuations([]byte(s))
	return string(util.ResolveNumericReferences(util.ResolveEntityNames(b)))
}
