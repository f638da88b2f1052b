package markdown

import (
	"strings"

	"github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
)

// cellSeparator joins the cells of a table row in chunk text.
const cellSeparator = " | "

// BlockKind is the kind of a Block.
type BlockKind int

// Kinds of blocks in chunk text.
const (
	ParagraphBlock BlockKind = iota
	ListBlock
	TableBlock
	CodeBlock
)

// Block is one block of a chunk's text: a paragraph, a list, a table or code.
type Block struct {
	Kind BlockKind
	// Text: a paragraph's text on one line; code's lines.
	Text string
	// Items of a list, Ordered when numbered (Start is the first number).
	Items   []ListItem
	Ordered bool
	Start   int
	// Header and Rows of a table.
	Header []string
	Rows   [][]string
}

// ListItem is one item of a list: its text on one line, and the items of a
// list nested in it.
type ListItem struct {
	Text  string
	Items []ListItem
}

// ParseBlocks reads a chunk's text back into blocks. Chunk text is what Parse
// renders (paragraphs on one line, "- " and "1. " list items, table rows as
// cells joined by " | " with the header first, code fenced), and any Markdown
// reads the same way (GFM tables included). Inline text is kept as written.
func ParseBlocks(chunkText string) []Block {
	src := []byte(chunkText)
	var out []Block
	for n := markdownParser.Parse(text.NewReader(src)).FirstChild(); n != nil; n = n.NextSibling() {
		out = appendBlocks(out, n, src)
	}
	return out
}

func appendBlocks(out []Block, n ast.Node, src []byte) []Block {
	switch n := n.(type) {
	case *ast.Paragraph, *ast.TextBlock:
		lines := sourceLines(n, src)
		if rows := tableRows(lines); rows != nil {
			return append(out, Block{Kind: TableBlock, Header: rows[0], Rows: rows[1:]})
		}
		return append(out, Block{Kind: ParagraphBlock, Text: strings.Join(lines, " ")})
	case *ast.List:
		b := Block{Kind: ListBlock, Ordered: n.IsOrdered(), Start: n.Start, Items: listItems(n, src)}
		return append(out, b)
	case *east.Table:
		b := Block{Kind: TableBlock}
		for row := n.FirstChild(); row != nil; row = row.NextSibling() {
			var cells []string
			for cell := row.FirstChild(); cell != nil; cell = cell.NextSibling() {
				cells = append(cells, strings.TrimSpace(string(cellSource(cell, src))))
			}
			if _, header := row.(*east.TableHeader); header {
				b.Header = cells
			} else {
				b.Rows = append(b.Rows, cells)
			}
		}
		return append(out, b)
	case *ast.FencedCodeBlock, *ast.CodeBlock:
		return append(out, Block{Kind: CodeBlock, Text: strings.Join(codeLines(n, src), "\n")})
	case *ast.Heading:
		return append(out, Block{Kind: ParagraphBlock, Text: strings.Join(sourceLines(n, src), " ")})
	case *ast.ThematicBreak, *ast.HTMLBlock:
		return out
	}
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		out = appendBlocks(out, c, src)
	}
	return out
}

func listItems(l *ast.List, src []byte) []ListItem {
	var items []ListItem
	for item := l.FirstChild(); item != nil; item = item.NextSibling() {
		var it ListItem
		var parts []string
		for c := item.FirstChild(); c != nil; c = c.NextSibling() {
			if sub, ok := c.(*ast.List); ok {
				it.Items = append(it.Items, listItems(sub, src)...)
				continue
			}
			for _, b := range appendBlocks(nil, c, src) {
				parts = append(parts, blockLine(b))
			}
		}
		it.Text = strings.Join(parts, " ")
		items = append(items, it)
	}
	return items
}

// blockLine is a block inside a list item, on one line.
func blockLine(b Block) string {
	switch b.Kind {
	case TableBlock:
		rows := [][]string{b.Header}
		var lines []string
		for _, r := range append(rows, b.Rows...) {
			lines = append(lines, strings.Join(r, cellSeparator))
		}
		return strings.Join(lines, " ")
	case ListBlock:
		var parts []string
		for _, it := range b.Items {
			parts = append(parts, it.Text)
		}
		return strings.Join(parts, " ")
	}
	return strings.ReplaceAll(b.Text, "\n", " ")
}

// tableRows reads lines as a chunk-text table: at least two lines, each with
// the same number (two or more) of cells. A paragraph of chunk text is one
// line, so only a table spans several with cells on each.
func tableRows(lines []string) [][]string {
	if len(lines) < 2 {
		return nil
	}
	var rows [][]string
	for _, l := range lines {
		// An empty first or last cell leaves the line starting or ending with "|".
		if strings.HasPrefix(l, "|") {
			l = " " + l
		}
		if strings.HasSuffix(l, "|") {
			l += " "
		}
		cells := strings.Split(l, cellSeparator)
		if len(cells) < 2 || (len(rows) > 0 && len(cells) != len(rows[0])) {
			return nil
		}
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		rows = append(rows, cells)
	}
	return rows
}

func sourceLines(n ast.Node, src []byte) []string {
	var out []string
	lines := n.Lines()
	for i := 0; i < lines.Len(); i++ {
		seg := lines.At(i)
		if l := strings.TrimSpace(string(seg.Value(src))); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// cellSource is a GFM table cell's source text.
func cellSource(cell ast.Node, src []byte) []byte {
	start, stop := -1, -1
	_ = ast.Walk(cell, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if t, ok := c.(*ast.Text); ok && entering {
			if start < 0 {
				start = t.Segment.Start
			}
			stop = t.Segment.Stop
		}
		return ast.WalkContinue, nil
	})
	if start < 0 {
		return nil
	}
	// A code span's backticks sit outside its text segments.
	for start > 0 && src[start-1] == '`' {
		start--
	}
	for stop < len(src) && src[stop] == '`' {
		stop++
	}
	return src[start:stop]
}
