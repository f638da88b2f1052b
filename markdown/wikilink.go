package markdown

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// Wikilink is a [[target]] or [[target|label]] in a chunk's text: Text[Start:End]
// (byte offsets) is what it reads as in the file, the label or, without one, the
// target as written. It is stored with the chunk (chunks.links) so a reader can
// read a link without a label as its target's title (RenderWikilinks), whatever
// that title is when the chunk is read.
type Wikilink struct {
	Target   string `json:"to"` // normalised slug, without "#section"
	Start    int    `json:"start"`
	End      int    `json:"end"`
	Labelled bool   `json:"label,omitempty"`
}

// Inside the parser a wikilink is written as an opening mark, the text it reads
// as, markTarget, its slug and markClose: the chunker moves it with the words
// around it and the spans come out exact (stripMarks). The marks are Unicode
// noncharacters, which the standard reserves for a program's internal use; one
// in a file is read as U+FFFD (sanitizeMarks). No mark reaches a Document.
const (
	markTitled   = '\uFDD0' // opens a link without a label
	markLabelled = '\uFDD1' // opens a link with a label
	markTarget   = '\uFDD2' // ends the text the link reads as; its slug follows
	markClose    = '\uFDD3'
)

// markPrefix is the first two bytes of every mark in UTF-8 (U+FDC0 to U+FDFF
// share them): a text without it has no mark, found at memchr's speed.
const markPrefix = "\xef\xb7"

// isMarkRune reports whether r is one of the parser's marks.
func isMarkRune(r rune) bool { return r >= markTitled && r <= markClose }

// writeLink writes a wikilink reading as text, to slug, marked.
func writeLink(out *strings.Builder, text, slug string, labelled bool) {
	if labelled {
		out.WriteRune(markLabelled)
	} else {
		out.WriteRune(markTitled)
	}
	out.WriteString(text)
	out.WriteRune(markTarget)
	out.WriteString(slug)
	out.WriteRune(markClose)
}

// sanitizeMarks replaces the marks in text that came from a file by U+FFFD,
// which has the same length in UTF-8 (line numbers and offsets stay).
func sanitizeMarks(s string) string {
	if !strings.Contains(s, markPrefix) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if isMarkRune(r) {
			return utf8.RuneError
		}
		return r
	}, s)
}

func sanitizeLines(lines []string) []string {
	for i, l := range lines {
		lines[i] = sanitizeMarks(l)
	}
	return lines
}

// plainText is s as it reads: marks and link targets dropped.
func plainText(s string) string {
	if !strings.Contains(s, markPrefix) {
		return s
	}
	text, _ := stripMarks(s)
	return text
}

// stripMarks returns s as it reads and the wikilinks whose marks it holds
// whole. A piece cut from a marked text (a chunk, an overlap) may hold part of
// a link: text before a target with no opening mark is kept, a target with no
// opening mark or no closing one is dropped, and neither is a link.
func stripMarks(s string) (string, []Wikilink) {
	if !strings.Contains(s, markPrefix) {
		return s, nil
	}
	var out strings.Builder
	out.Grow(len(s))
	var links []Wikilink
	open := false // an opening mark was seen and its target not yet
	var cur Wikilink
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch r {
		case markTitled, markLabelled:
			open = true
			cur = Wikilink{Start: out.Len(), Labelled: r == markLabelled}
		case markTarget:
			end := strings.IndexRune(s[i+size:], markClose)
			if end < 0 {
				return out.String(), links
			}
			if open {
				cur.End, cur.Target = out.Len(), s[i+size:i+size+end]
				links = append(links, cur)
			}
			open = false
			i += size + end + utf8.RuneLen(markClose)
			continue
		case markClose:
		default:
			out.WriteString(s[i : i+size])
		}
		i += size
	}
	return out.String(), links
}

// skipTail returns the position after the link target (and closing mark) that
// starts at i in s, or i when none does: a text is never cut inside a target.
func skipTail(s string, i int) int {
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch r {
		case markTarget:
			end := strings.IndexRune(s[i:], markClose)
			if end < 0 {
				return len(s)
			}
			i += end + utf8.RuneLen(markClose)
		case markClose:
			i += size
		default:
			return i
		}
	}
	return i
}

// skipOpen returns the position after the opening marks at i in s.
func skipOpen(s string, i int) int {
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r != markTitled && r != markLabelled {
			return i
		}
		i += size
	}
	return i
}

// outsideTarget moves a cut at n in s out of a link target: to where the
// target starts, or past it when it starts s.
func outsideTarget(s string, n int) int {
	start := strings.LastIndex(s[:n], string(markTarget))
	if start < 0 || strings.Contains(s[start:n], string(markClose)) {
		return n
	}
	if start > 0 {
		return start
	}
	return skipTail(s, 0)
}

// ReadLink is a wikilink as a reader gets it: Text[Start:End] is what it reads
// as, and Title is its target's title ("" for a target that does not exist or
// that the reader may not see). A link without a label that has a title reads
// as it (Titled).
type ReadLink struct {
	Target, Title string
	Start, End    int
	Labelled      bool
}

// Titled reports whether the link reads as its target's title.
func (l ReadLink) Titled() bool { return l.Title != "" && !l.Labelled }

// titleSeparator joins a title and the section a link names ([[slug#section]]),
// as a heading path is shown.
const titleSeparator = " › "

// RenderWikilinks returns a stored text as a reader gets it: each wikilink
// without a label reads as its target's title (titles[i] for links[i], as the
// stored links, chunks.links, list them), and keeps its slug when the target
// is missing or hidden from the reader, so it still reads as something. It
// also returns where each link now sits. Links that do not fit the text (a
// hand-edited row) are ignored.
func RenderWikilinks(text string, stored []byte, titles []string) (string, []ReadLink) {
	links := DecodeWikilinks(stored)
	if len(links) == 0 {
		return text, nil
	}
	var out strings.Builder
	var read []ReadLink
	last := 0
	for i, l := range links {
		if l.Start < last || l.End < l.Start || l.End > len(text) || !runeBoundary(text, l.Start) || !runeBoundary(text, l.End) {
			continue
		}
		title := ""
		if i < len(titles) {
			title = titles[i]
		}
		out.WriteString(text[last:l.Start])
		shown := text[l.Start:l.End]
		if title != "" && !l.Labelled {
			shown = title
			// The section a link names stays readable after the title.
			if _, section, ok := strings.Cut(text[l.Start:l.End], "#"); ok && strings.TrimSpace(section) != "" {
				shown += titleSeparator + strings.TrimSpace(section)
			}
		}
		read = append(read, ReadLink{Target: l.Target, Title: title, Start: out.Len(), End: out.Len() + len(shown), Labelled: l.Labelled})
		out.WriteString(shown)
		last = l.End
	}
	out.WriteString(text[last:])
	return out.String(), read
}

// EncodeWikilinks is links as chunks.links stores them: a JSON array, "[]" for none.
func EncodeWikilinks(links []Wikilink) []byte {
	if len(links) == 0 {
		return []byte("[]")
	}
	b, _ := json.Marshal(links) // plain structs always encode
	return b
}

// runeBoundary reports whether i is a character boundary of s.
func runeBoundary(s string, i int) bool { return i == len(s) || utf8.RuneStart(s[i]) }

// DecodeWikilinks reads chunks.links; a value it cannot read holds no link.
func DecodeWikilinks(stored []byte) []Wikilink {
	if len(stored) <= 2 { // "", "[]"
		return nil
	}
	var links []Wikilink
	if json.Unmarshal(stored, &links) != nil {
		return nil
	}
	return links
}
