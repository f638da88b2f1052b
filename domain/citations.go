package domain

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/canonkb/canon/internal/english"
)

// markerPattern matches citation markers: [3], [1, 4], [2][5].
var markerPattern = regexp.MustCompile(`\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\]`)

// CitedAnswer is an answer with its markers checked against the chunks it may cite.
type CitedAnswer struct {
	// Text is the answer with markers that point at no chunk removed.
	Text string
	// Cited lists the valid marker numbers in order of first appearance.
	Cited []int
	// Dropped lists marker numbers that pointed at nothing.
	Dropped []int
}

// CheckMarkers keeps the markers whose number is valid and removes the others, so an
// invalid id is never shown.
func CheckMarkers(answer string, valid func(n int) bool) CitedAnswer {
	var out CitedAnswer
	text := rewriteMarkers(answer, func(ns []int) []int {
		var keep []int
		for _, n := range ns {
			if valid(n) {
				keep = append(keep, n)
				if !slices.Contains(out.Cited, n) {
					out.Cited = append(out.Cited, n)
				}
			} else if !slices.Contains(out.Dropped, n) {
				out.Dropped = append(out.Dropped, n)
			}
		}
		return keep
	})
	// Removing a marker can leave a space before punctuation.
	text = strings.NewReplacer(" .", ".", " ,", ",", "  ", " ").Replace(text)
	out.Text = strings.TrimSpace(text)
	return out
}

// rewriteMarkers replaces each marker of text with the numbers keep returns for its
// own ([3, 5] -> keep([3 5])), or removes it when keep returns none.
func rewriteMarkers(text string, keep func(ns []int) []int) string {
	return markerPattern.ReplaceAllStringFunc(text, func(m string) string {
		var ns []int
		for _, part := range strings.Split(m[1:len(m)-1], ",") {
			n, _ := strconv.Atoi(strings.TrimSpace(part))
			ns = append(ns, n)
		}
		kept := keep(ns)
		if len(kept) == 0 {
			return ""
		}
		parts := make([]string, len(kept))
		for i, n := range kept {
			parts[i] = strconv.Itoa(n)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	})
}

// Support is how well the cited chunks back one sentence.
type Support struct {
	Sentence  string
	Cited     []int
	Share     float64
	Supported bool
}

// CheckSupport measures, for each sentence of the answer that carries markers, the
// share of its content terms that occur in the chunks it cites (after light
// stemming). A sentence is supported when the share reaches threshold. Sentences
// without markers are not judged.
func CheckSupport(answer string, chunkText func(n int) (string, bool), threshold float64) []Support {
	var out []Support
	for _, sentence := range Sentences(answer) {
		var cited []int
		for _, m := range markerPattern.FindAllStringSubmatch(sentence, -1) {
			for _, part := range strings.Split(m[1], ",") {
				n, _ := strconv.Atoi(strings.TrimSpace(part))
				if _, ok := chunkText(n); ok && !slices.Contains(cited, n) {
					cited = append(cited, n)
				}
			}
		}
		if len(cited) == 0 {
			continue
		}
		claim := ContentTerms(markerPattern.ReplaceAllString(sentence, ""))
		evidence := map[string]bool{}
		for _, n := range cited {
			text, _ := chunkText(n)
			for _, t := range ContentTerms(text) {
				evidence[t] = true
			}
		}
		share := 1.0
		if len(claim) > 0 {
			found := 0
			for _, t := range claim {
				if evidence[t] {
					found++
				}
			}
			share = float64(found) / float64(len(claim))
		}
		out = append(out, Support{Sentence: strings.TrimSpace(sentence), Cited: cited, Share: share, Supported: share >= threshold})
	}
	return out
}

// Sentences splits text into sentences and list items.
func Sentences(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), "-*•"))
		start := 0
		runes := []rune(line)
		for i := 0; i < len(runes); i++ {
			if runes[i] != '.' && runes[i] != '!' && runes[i] != '?' {
				continue
			}
			// A sentence ends at terminal punctuation followed by a space and then a
			// capital, a marker or the end; markers right after the stop stay with it.
			j := i + 1
			for j < len(runes) && runes[j] == '[' {
				k := j
				for k < len(runes) && runes[k] != ']' {
					k++
				}
				if k == len(runes) {
					break
				}
				j = k + 1
			}
			// "!" and "?" end a sentence before any space; "." only before a capital
			// or a marker, so "e.g. this" and "v2.3.1" stay whole.
			strong := runes[i] != '.'
			if j == len(runes) || (unicode.IsSpace(runes[j]) && j+1 < len(runes) &&
				(strong || unicode.IsUpper(runes[j+1]) || runes[j+1] == '[')) {
				if s := strings.TrimSpace(string(runes[start:j])); s != "" {
					out = append(out, s)
				}
				start = j
				i = j - 1
			}
		}
		if s := strings.TrimSpace(string(runes[start:])); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// ContentTerms lower-cases text, drops stop words, fillers and very short words,
// and stems what is left so "rollbacks" and "rollback" meet.
func ContentTerms(text string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_'
	}) {
		if len([]rune(w)) < 3 || english.IsFiller(w) {
			continue
		}
		out = append(out, english.Stem(w))
	}
	return out
}
