package domain

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// snippetReference is Snippet as first written (strings.Fields, a lower-cased
// copy of every word): the one-pass version must cut exactly the same windows.
func snippetReference(text string, lexemes []string) string {
	text = strings.Join(strings.Fields(text), " ")
	runes := []rune(text)
	if len(runes) <= SnippetLength {
		return text
	}
	center := 0
	var useful []string
	for _, l := range lexemes {
		if utf8.RuneCountInString(l) >= 2 {
			useful = append(useful, strings.ToLower(l))
		}
	}
found:
	for i := 0; i < len(runes); {
		if !isWord(runes[i]) {
			i++
			continue
		}
		j := i
		for j < len(runes) && (isWord(runes[j]) || runes[j] == '_' || runes[j] == '.' && j+1 < len(runes) && isWord(runes[j+1])) {
			j++
		}
		word := strings.ToLower(string(runes[i:j]))
		for _, l := range useful {
			if strings.HasPrefix(word, l) {
				center = (i + j) / 2
				break found
			}
		}
		i = j
	}
	start := max(center-SnippetLength/2, 0)
	end := start + SnippetLength
	if end > len(runes) {
		end = len(runes)
		start = max(end-SnippetLength, 0)
	}
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

func TestSnippetMatchesReference(t *testing.T) {
	words := []string{"cache", "Caching", "ÉCOLE", "école", "E5032", "KB_RRF_K", "v2.3.1", "pgx/v5", "the", "a",
		"Straße", "naïve", "日本語", "ΣΊΣΥΦΟΣ", "replication", "lag", "-", "—", "(x)", "İstanbul"}
	spaces := []string{" ", "  ", "\n", "\t", "\n\n ", "\u00a0", "\u2003"}
	lexemes := [][]string{nil, {"cach"}, {"écol"}, {"e5032"}, {"kb_rrf_k"}, {"σίσυφοσ"}, {"straß"}, {"x"}, {"lag", "replic"}, {"i̇stanbul"}}
	r := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 3000; n++ {
		var b strings.Builder
		if r.IntN(4) == 0 {
			b.WriteString(spaces[r.IntN(len(spaces))])
		}
		for range r.IntN(120) {
			b.WriteString(words[r.IntN(len(words))])
			b.WriteString(spaces[r.IntN(len(spaces))])
		}
		text := b.String()
		lex := lexemes[r.IntN(len(lexemes))]
		if got, want := Snippet(text, lex), snippetReference(text, lex); got != want {
			t.Fatalf("Snippet(%q, %q)\n got  %q\n want %q", text, lex, got, want)
		}
	}
}

func BenchmarkSnippet(b *testing.B) {
	text := strings.Repeat("filler words here, and some more of them. ", 20) + "the E5032 error means replication lag " +
		strings.Repeat("more text after ", 20)
	lexemes := []string{"error", "e5032", "replic", "lag"}
	for b.Loop() {
		Snippet(text, lexemes)
	}
}
