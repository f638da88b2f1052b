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
	runes := collapseSpace(text)
	if len(runes) <= SnippetLength {
		return string(runes)
	}
	center := firstMatch(runes, lexemes)
	start := center - SnippetLength/2
	if start < 0 {
		start = 0
	}
	end := start + SnippetLength
	if end > len(runes) {
		end = len(runes)
		start = max(end-SnippetLength, 0)
	}
	// Move inward to word boundaries so no word is cut in half.
	if start > 0 {
		for start < end && !unicode.IsSpace(runes[start-1]) {
			start++
		}
	}
	if end < len(runes) {
		for end > start && !unicode.IsSpace(runes[end]) {
			end--
		}
	}
	out := strings.TrimSpace(string(runes[start:end]))
	if start > 0 {
		out = "…" + out
	}
	if end < len(runes) {
		out += "…"
	}
	return out
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
