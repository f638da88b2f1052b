package convert

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
	"golang.org/x/net/html/charset"

	"github.com/canonkb/canon/markdown"
)

// maxHTMLDepth bounds element nesting: the walk is recursive, and no page a
// person reads nests deeper.
const maxHTMLDepth = 512

// convertHTML reads an HTML page: <h1>…<h6> make the heading path (the first
// <h1> titles the document, else <title>); paragraphs and other blocks are
// prose, lists and tables keep their lines, <pre> is code. Dropped: <head>
// except its <title>, scripts, styles, <noscript>, <template>, embedded
// objects, forms, navigation (<nav>, role="navigation"), hidden elements, and
// page-level <header>, <footer> and <aside> (outside <main> and <article>).
// The encoding comes from the byte order mark, a <meta> charset or the bytes
// (UTF-8 by default).
func convertHTML(_ context.Context, _ *Converter, _ string, content []byte) (*markdown.Outline, error) {
	r, err := charset.NewReader(bytes.NewReader(content), "text/html")
	if err != nil {
		return nil, fmt.Errorf("html: %w", err)
	}
	root, err := html.Parse(r)
	if err != nil {
		return nil, errors.New("unreadable HTML: " + strings.TrimPrefix(err.Error(), "html: "))
	}
	w := htmlWalker{}
	if err := w.walk(root, 0, false); err != nil {
		return nil, err
	}
	w.flush()
	w.o.Title = w.title
	return &w.o, nil
}

type htmlWalker struct {
	o      markdown.Outline
	title  string
	inline strings.Builder // text of the paragraph being read
}

var errTooDeep = errors.New("unreadable HTML: elements nest deeper than 512 levels")

// dropped reports elements whose content is not the page's text.
func dropped(n *html.Node, inContent bool) bool {
	switch n.DataAtom {
	case atom.Script, atom.Style, atom.Noscript, atom.Template, atom.Nav, atom.Svg, atom.Math,
		atom.Iframe, atom.Object, atom.Embed, atom.Canvas, atom.Form, atom.Select, atom.Button:
		return true
	case atom.Header, atom.Footer, atom.Aside:
		return !inContent
	}
	for _, a := range n.Attr {
		switch {
		case a.Key == "hidden",
			a.Key == "aria-hidden" && a.Val == "true",
			a.Key == "role" && (a.Val == "navigation" || a.Val == "banner" || a.Val == "contentinfo"):
			return true
		}
	}
	return false
}

// blockElements end the paragraph before them and start a new one after.
var blockElements = map[atom.Atom]bool{
	atom.P: true, atom.Div: true, atom.Section: true, atom.Article: true, atom.Main: true, atom.Blockquote: true,
	atom.Dl: true, atom.Dt: true, atom.Dd: true, atom.Figure: true, atom.Figcaption: true, atom.Address: true,
	atom.Details: true, atom.Summary: true, atom.Hr: true, atom.Header: true, atom.Footer: true, atom.Aside: true,
	atom.Body: true, atom.Caption: true, atom.Fieldset: true, atom.Center: true,
}

func (w *htmlWalker) walk(n *html.Node, depth int, inContent bool) error {
	if depth > maxHTMLDepth {
		return errTooDeep
	}
	switch n.Type {
	case html.TextNode:
		// Source line breaks are spaces; only <br> breaks a line.
		w.inline.WriteString(strings.Map(func(r rune) rune {
			if unicode.IsSpace(r) {
				return ' '
			}
			return r
		}, n.Data))
		return nil
	case html.DocumentNode:
		return w.children(n, depth, inContent)
	case html.ElementNode:
	default:
		return nil
	}
	if dropped(n, inContent) {
		return nil
	}
	switch n.DataAtom {
	case atom.Head:
		if t := find(n, atom.Title); t != nil && w.title == "" {
			w.title = inlineText(t)
		}
		return nil
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		w.flush()
		level, _ := strconv.Atoi(n.Data[1:])
		w.o.Heading(level, inlineText(n))
		return nil
	case atom.Pre:
		w.flush()
		w.o.Code(strings.Split(strings.TrimRight(rawText(n), "\n"), "\n"), codeLanguage(n))
		return nil
	case atom.Ul, atom.Ol:
		w.flush()
		w.o.Lines(listLines(n, ""))
		return nil
	case atom.Table:
		w.flush()
		w.o.Lines(tableLines(n))
		return nil
	case atom.Br:
		w.inline.WriteString("\n")
		return nil
	case atom.A:
		if err := w.children(n, depth, inContent); err != nil {
			return err
		}
		w.inline.WriteString(linkSuffix(n))
		return nil
	}
	block := blockElements[n.DataAtom]
	if block {
		w.flush()
	}
	if n.DataAtom == atom.Main || n.DataAtom == atom.Article {
		inContent = true
	}
	if err := w.children(n, depth, inContent); err != nil {
		return err
	}
	if block {
		w.flush()
	}
	return nil
}

func (w *htmlWalker) children(n *html.Node, depth int, inContent bool) error {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if err := w.walk(c, depth+1, inContent); err != nil {
			return err
		}
	}
	return nil
}

// flush ends the paragraph being read.
func (w *htmlWalker) flush() {
	if t := collapse(w.inline.String()); t != "" {
		w.o.Paragraph(t)
	}
	w.inline.Reset()
}

// collapse folds whitespace runs as a browser does, keeping the line breaks
// of <br>.
func collapse(s string) string {
	lines := strings.Split(s, "\n")
	out := lines[:0]
	for _, l := range lines {
		if l = strings.Join(strings.Fields(l), " "); l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// inlineText is the text of an element as one line (a heading, a cell, an item).
func inlineText(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node, int)
	walk = func(n *html.Node, depth int) {
		if depth > maxHTMLDepth {
			return
		}
		switch {
		case n.Type == html.TextNode:
			b.WriteString(n.Data)
		case n.Type == html.ElementNode && (dropped(n, true) || n.DataAtom == atom.Ul || n.DataAtom == atom.Ol):
			return
		case n.Type == html.ElementNode && n.DataAtom == atom.Br:
			b.WriteString(" ")
		default:
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				if c.Type == html.ElementNode && blockElements[c.DataAtom] {
					b.WriteString(" ")
				}
				walk(c, depth+1)
			}
			if n.Type == html.ElementNode && n.DataAtom == atom.A {
				b.WriteString(linkSuffix(n))
			}
		}
	}
	walk(n, 0)
	return strings.Join(strings.Fields(b.String()), " ")
}

// rawText is the text of a <pre> as written.
func rawText(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node, int)
	walk = func(n *html.Node, depth int) {
		if depth > maxHTMLDepth {
			return
		}
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, depth+1)
		}
	}
	walk(n, 0)
	return strings.TrimPrefix(b.String(), "\n")
}

// codeLanguage reads class="language-go" (or lang-go) on a <pre> or its <code>.
func codeLanguage(pre *html.Node) string {
	for _, n := range []*html.Node{pre, find(pre, atom.Code)} {
		if n == nil {
			continue
		}
		for _, class := range strings.Fields(attr(n, "class")) {
			for _, prefix := range []string{"language-", "lang-"} {
				if lang, ok := strings.CutPrefix(class, prefix); ok {
					return lang
				}
			}
		}
	}
	return ""
}

// listLines renders a list as "- item" or "1. item" lines, nested lists indented.
func listLines(list *html.Node, indent string) []string {
	var out []string
	num := 1
	if s, err := strconv.Atoi(attr(list, "start")); err == nil {
		num = s
	}
	for li := list.FirstChild; li != nil; li = li.NextSibling {
		if li.Type != html.ElementNode || li.DataAtom != atom.Li || dropped(li, true) {
			continue
		}
		marker := "- "
		if list.DataAtom == atom.Ol {
			marker = strconv.Itoa(num) + ". "
			num++
		}
		if t := inlineText(li); t != "" {
			out = append(out, indent+marker+t)
		}
		for c := li.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.ElementNode && (c.DataAtom == atom.Ul || c.DataAtom == atom.Ol) {
				out = append(out, listLines(c, indent+strings.Repeat(" ", len(marker)))...)
			}
		}
	}
	return out
}

// tableLines renders each row as "cell | cell".
func tableLines(table *html.Node) []string {
	var out []string
	var rows func(*html.Node, int)
	rows = func(n *html.Node, depth int) {
		if depth > maxHTMLDepth {
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type != html.ElementNode || dropped(c, true) {
				continue
			}
			if c.DataAtom != atom.Tr {
				rows(c, depth+1)
				continue
			}
			var cells []string
			empty := true
			for td := c.FirstChild; td != nil; td = td.NextSibling {
				if td.Type == html.ElementNode && (td.DataAtom == atom.Td || td.DataAtom == atom.Th) {
					t := inlineText(td)
					cells = append(cells, t)
					empty = empty && t == ""
				}
			}
			if !empty {
				out = append(out, strings.Join(cells, " | "))
			}
		}
	}
	rows(table, 0)
	return out
}

// linkSuffix keeps an absolute http(s) link's URL after its text, as the
// Markdown converter does.
func linkSuffix(a *html.Node) string {
	href := attr(a, "href")
	u, err := url.Parse(href)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || inlineTextOnly(a) == href {
		return ""
	}
	return " (" + href + ")"
}

func inlineTextOnly(n *html.Node) string {
	var b strings.Builder
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	}
	return strings.TrimSpace(b.String())
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// find returns the first element of this kind under n, in document order.
func find(n *html.Node, a atom.Atom) *html.Node { return findDepth(n, a, 0) }

func findDepth(n *html.Node, a atom.Atom, depth int) *html.Node {
	if depth > maxHTMLDepth {
		return nil
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && c.DataAtom == a {
			return c
		}
		if f := findDepth(c, a, depth+1); f != nil {
			return f
		}
	}
	return nil
}
