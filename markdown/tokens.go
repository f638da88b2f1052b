package markdown

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// CountTokens estimates how many tokens s costs in an OpenAI cl100k_base style
// BPE vocabulary, without a vocabulary: it splits s the way that tokenizer's
// pre-tokenizer does (letter runs with one leading space or mark, digit groups
// of three, punctuation runs that swallow a following newline, whitespace runs)
// and prices each piece from tables measured against cl100k_base.
//
// It is within a few percent of the real tokenizer and two orders of magnitude
// faster (measurements: bench/results/tokens.md).
func CountTokens(s string) int { return roundTokens(tokenCost(s)) }

// roundTokens turns hundredths of a token into tokens: rounded, and at least
// one for any text.
func roundTokens(h int) int {
	if h > 0 && h < 150 {
		return 1
	}
	return (h + 50) / 100
}

// tokenCost is the estimate in hundredths of a token; unlike CountTokens it
// adds up over pieces of a text without rounding errors.
func tokenCost(s string) int {
	s = plainText(s) // a marked wikilink costs what it reads as
	total := 0
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case isASCIILetter(c):
			j := i
			for j < len(s) && isASCIILetter(s[j]) {
				j++
			}
			total += letterRunCost(s[i:j])
			i = j
		case c >= '0' && c <= '9':
			j := i
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			total += (j - i + 2) / 3 * 100 // digits are grouped by three
			i = j
		case isBlank(c):
			j := i
			newlines, lastNL := 0, -1
			for j < len(s) && isBlank(s[j]) {
				if s[j] == '\n' {
					newlines++
					lastNL = j
				}
				j++
			}
			// The last blank before a word or a mark joins it; runs of one
			// character are single tokens up to a length.
			indent := s[i:j]
			if newlines > 0 {
				total += 100 + (newlines-1)/16*100
				indent = s[lastNL+1 : j]
			}
			joins := j < len(s) && !(s[j] >= '0' && s[j] <= '9') && s[j] < utf8.RuneSelf
			n := len(indent)
			if !joins {
				n++ // nothing to join: the last blank is a token of its own
			}
			if n > 1 {
				tabs := strings.Count(indent, "\t")
				total += 100 + (len(indent)-tabs)/80*100 + tabs/2*100
			}
			i = j
		case c < utf8.RuneSelf:
			j := i
			for j < len(s) && s[j] < utf8.RuneSelf && isMark(s[j]) {
				j++
			}
			n := markRunLen(s[i:j])
			if n == 1 && j < len(s) && isASCIILetter(s[j]) {
				// One mark before a word is part of the word's piece: ".com", "/api".
				total += 40
				i = j
				continue
			}
			if n < len(markCost) {
				total += markCost[n]
			} else {
				total += n * 45
			}
			for j < len(s) && s[j] == '\n' { // "}\n" and ".\n\n" are single pieces
				j++
			}
			i = j
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			switch {
			case r >= 0x2E80: // CJK, emoji and other wide scripts: about a token a rune
				total += 120
			case unicode.IsLetter(r):
				total += 60
			default:
				total += 100
			}
			i += size
		}
	}
	return total
}

// Mean cl100k cost, in hundredths, of " word" by length of the ASCII letter
// segment (index = length) for lower-case, Capitalised and UPPER-CASE words,
// and of a punctuation run by length.
var (
	lowerCost = [...]int{0, 100, 100, 102, 104, 105, 109, 110, 116, 125, 132, 154, 168, 170, 223, 246}
	capCost   = [...]int{0, 100, 102, 115, 125, 118, 122, 123, 145, 179, 183, 202, 227, 223, 284, 275}
	upperCost = [...]int{0, 100, 101, 143, 148, 177, 149, 138, 206, 224, 180, 288, 276, 349, 330, 400}
	markCost  = [...]int{0, 100, 103, 123, 179, 233, 257, 320}
)

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isMark(c byte) bool { return !isASCIILetter(c) && !(c >= '0' && c <= '9') && !isBlank(c) }

// letterRunCost prices an ASCII letter run, split where a lower-case letter is
// followed by an upper-case one (camelCase splits there in BPE too).
func letterRunCost(w string) int {
	total, start := 0, 0
	for k := 1; k <= len(w); k++ {
		if k == len(w) || (w[k] >= 'A' && w[k] <= 'Z' && w[k-1] >= 'a' && w[k-1] <= 'z') {
			total += segmentCost(w[start:k])
			start = k
		}
	}
	return total
}

func segmentCost(w string) int {
	upper := 0
	for k := 0; k < len(w); k++ {
		if w[k] <= 'Z' {
			upper++
		}
	}
	table := capCost[:]
	switch {
	case upper == 0:
		table = lowerCost[:]
	case upper == len(w) && len(w) > 1:
		table = upperCost[:]
	}
	if len(w) < len(table) {
		return table[len(w)]
	}
	return len(w) * 24 // long words: about one token per four letters
}

// markRunLen is the effective length of a punctuation run: a character repeated
// more than three times (----, ====, ***) costs little more than three.
func markRunLen(p string) int {
	n := 0
	for k := 0; k < len(p); {
		m := 1
		for k+m < len(p) && p[k+m] == p[k] {
			m++
		}
		k += m
		if m > 3 {
			m = 3 + m/32
		}
		n += m
	}
	return n
}
