package convert

import (
	"context"
	"regexp"
	"strings"

	"github.com/canonkb/canon/markdown"
)

// listItemRe matches a line that starts a list item: "- ", "* ", "• ", "1. ", "2) ".
var listItemRe = regexp.MustCompile(`^\s*(?:[-*•]|\d{1,3}[.)])\s+\S`)

// blankLineRe separates paragraphs: a line holding nothing but spaces.
var blankLineRe = regexp.MustCompile(`\n[ \t]*\n`)

// convertText reads plain text: paragraphs are separated by blank lines; a
// paragraph whose lines are all list items or all indented keeps its lines
// (a list, preformatted text), any other is prose whose lines are joined. Plain
// text declares no title and no headings: the title is the sidecar's or the
// file name.
func convertText(_ context.Context, _ *Converter, path string, content []byte) (*markdown.Outline, error) {
	src, err := markdown.NormalizeText(path, content)
	if err != nil {
		return nil, err
	}
	var o markdown.Outline
	for _, para := range blankLineRe.Split(string(src), -1) {
		lines := strings.Split(strings.Trim(para, "\n"), "\n")
		switch {
		case strings.TrimSpace(para) == "":
		case all(lines, listItemRe.MatchString):
			o.Lines(lines)
		case all(lines, indented):
			o.Code(lines, "")
		default:
			o.Paragraph(strings.Join(strings.Fields(para), " "))
		}
	}
	return &o, nil
}

func indented(l string) bool { return strings.HasPrefix(l, "    ") || strings.HasPrefix(l, "\t") }

func all(lines []string, f func(string) bool) bool {
	for _, l := range lines {
		if !f(l) {
			return false
		}
	}
	return true
}
