package domain

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// SnippetLength is the width of a snippet window, in characters.
const SnippetLength = 240

// Snippet returns a window of about SnippetLength characters of text centred on the
// first word matching a query lexeme, cut at word boundaries, with an ellipsis on
// each side that was cut. Lexemes are stemmed (cach, standardis), so a word matches
// when it starts with one; without a match the window starts at the beginning.
func Snippet(text string, lexemes []string) string {
	// Most chunks are ASCII, where a byte is a character: that path skips
	// decoding runes, a third of a search's Go time when it made the snippets.
	if b, ok := collapseASCII(text); ok {
		if len(b) <= SnippetLength {
			return string(b)
		}
		start, end := window(len(b), firstMatchASCII(b, lexemes), func(i int) bool { return b[i] == ' ' })
		return cut(string(b[start:end]), start > 0, end < len(b))
	}
	return snippetRunes(text, lexemes)
}

// snippetRunes is Snippet for any text, character by character.
func snippetRunes(text string, lexemes []string) string {
	runes := collapseSpace(text)
	if len(runes) <= SnippetLength {
		return string(runes)
	}
	start, end := window(len(runes), firstMatch(runes, lexemes), func(i int) bool { return unicode.IsSpace(runes[i]) })
	return cut(string(runes[start:end]), start > 0, end < len(runes))
}

// window returns the SnippetLength characters of n around center, moved inward
// to word boundaries so no word is cut in half (space reports a space at i).
func window(n, center int, space func(i int) bool) (start, end int) {
	start = max(center-SnippetLength/2, 0)
	end = start + SnippetLength
	if end > n {
		end = n
		start = max(end-SnippetLength, 0)
	}
	if start > 0 {
		for start < end && !space(start-1) {
			start++
		}
	}
	if end < n {
		for end > start && !space(end) {
			end--
		}
	}
	return start, end
}

// cut trims the window and marks each side that was cut with an ellipsis.
func cut(s string, before, after bool) string {
	s = strings.TrimSpace(s)
	if before {
		s = "…" + s
	}
	if after {
		s += "…"
	}
	return s
}

// collapseASCII is collapseSpace for text that is all ASCII; false otherwise.
// It copies each run of non-space bytes at once.
func collapseASCII(text string) ([]byte, bool) {
	out := make([]byte, 0, len(text))
	for i := 0; i < len(text); {
		switch asciiClass[text[i]] {
		case notASCII:
			return nil, false
		case asciiSpace:
			i++
			continue
		}
		j := i + 1
		for j < len(text) && asciiClass[text[j]] == asciiOther {
			j++
		}
		if len(out) > 0 {
			out = append(out, ' ')
		}
		out = append(out, text[i:j]...)
		i = j
	}
	return out, true
}

const (
	asciiOther = iota
	asciiSpace // unicode.IsSpace's ASCII characters
	notASCII
)

var asciiClass = func() (c [256]uint8) {
	for b := utf8.RuneSelf; b < 256; b++ {
		c[b] = notASCII
	}
	for _, b := range []byte{'\t', '\n', '\v', '\f', '\r', ' '} {
		c[b] = asciiSpace
	}
	return c
}()

// firstMatchASCII is firstMatch for collapseASCII's text. A lexeme with a
// character outside ASCII cannot match it, byte by byte or rune by rune.
func firstMatchASCII(text []byte, lexemes []string) int {
	var useful []string
	for _, l := range lexemes {
		if utf8.RuneCountInString(l) >= 2 {
			useful = append(useful, strings.ToLower(l))
		}
	}
	for i := 0; i < len(text); {
		if !isASCIIWord(text[i]) {
			i++
			continue
		}
		j := i
		for j < len(text) && (isASCIIWord(text[j]) || text[j] == '_' || text[j] == '.' && j+1 < len(text) && isASCIIWord(text[j+1])) {
			j++
		}
		for _, l := range useful {
			if hasLowerPrefixASCII(text[i:j], l) {
				return (i + j) / 2
			}
		}
		i = j
	}
	return 0
}

func hasLowerPrefixASCII(word []byte, prefix string) bool {
	if len(word) < len(prefix) {
		return false
	}
	for k := 0; k < len(prefix); k++ {
		c := word[k]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != prefix[k] {
			return false
		}
	}
	return true
}

func isASCIIWord(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// collapseSpace returns text's runes with every run of white space made one
// space and none at either end (strings.Fields joined by spaces, in one pass: a
// search makes a snippet for each of its hits).
func collapseSpace(text string) []rune {
	out := make([]rune, 0, len(text))
	space := false
	for _, r := range text {
		if unicode.IsSpace(r) {
			space = len(out) > 0
			continue
		}
		if space {
			out = append(out, ' ')
			space = false
		}
		out = append(out, r)
	}
	return out
}

// firstMatch returns the rune offset of the middle of the first matching word.
func firstMatch(runes []rune, lexemes []string) int {
	var useful [][]rune
	for _, l := range lexemes {
		if utf8.RuneCountInString(l) >= 2 {
			useful = append(useful, []rune(strings.ToLower(l)))
		}
	}
	for i := 0; i < len(runes); {
		if !isWord(runes[i]) {
			i++
			continue
		}
		j := i
		for j < len(runes) && (isWord(runes[j]) || runes[j] == '_' || runes[j] == '.' && j+1 < len(runes) && isWord(runes[j+1])) {
			j++
		}
		for _, l := range useful {
			if hasLowerPrefix(runes[i:j], l) {
				return (i + j) / 2
			}
		}
		i = j
	}
	return 0
}

// hasLowerPrefix reports whether word, lower-cased, starts with prefix.
func hasLowerPrefix(word, prefix []rune) bool {
	if len(word) < len(prefix) {
		return false
	}
	for k, r := range prefix {
		if unicode.ToLower(word[k]) != r {
			return false
		}
	}
	return true
}

func isWord(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }
