package domain

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// The one-pass Snippet changed only how the text is collapsed and how the first
// matching word is found; the window around it is the same code. Each part is
// checked against what it replaced: strings.Fields joined by spaces, and a
// lower-cased copy of every word compared with strings.HasPrefix.
func collapseReference(text string) []rune { return []rune(strings.Join(strings.Fields(text), " ")) }

func firstMatchReference(runes []rune, lexemes []string) int {
	var useful []string
	for _, l := range lexemes {
		if utf8.RuneCountInString(l) >= 2 {
			useful = append(useful, strings.ToLower(l))
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
		word := strings.ToLower(string(runes[i:j]))
		for _, l := range useful {
			if strings.HasPrefix(word, l) {
				return (i + j) / 2
			}
		}
		i = j
	}
	return 0
}

// randomText strings up to n of words, each followed by one of spaces, sometimes
// after a leading space.
func randomText(r *rand.Rand, words, spaces []string, n int) string {
	var b strings.Builder
	if r.IntN(4) == 0 {
		b.WriteString(spaces[r.IntN(len(spaces))])
	}
	for range r.IntN(n) {
		b.WriteString(words[r.IntN(len(words))])
		b.WriteString(spaces[r.IntN(len(spaces))])
	}
	return b.String()
}

func TestSnippetMatchesReference(t *testing.T) {
	t.Parallel()
	words := []string{"cache", "Caching", "ÉCOLE", "école", "E5032", "KB_RRF_K", "v2.3.1", "pgx/v5", "the", "a",
		"Straße", "naïve", "日本語", "ΣΊΣΥΦΟΣ", "replication", "lag", "-", "—", "(x)", "İstanbul"}
	spaces := []string{" ", "  ", "\n", "\t", "\n\n ", "\u00a0", "\u2003"}
	lexemes := [][]string{nil, {"cach"}, {"écol"}, {"e5032"}, {"kb_rrf_k"}, {"σίσυφοσ"}, {"straß"}, {"x"}, {"lag", "replic"}, {"i̇stanbul"}}
	r := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 3000; n++ {
		text := randomText(r, words, spaces, 120)
		lex := lexemes[r.IntN(len(lexemes))]
		runes := collapseSpace(text)
		if got, want := string(runes), string(collapseReference(text)); got != want {
			t.Fatalf("collapseSpace(%q)\n got  %q\n want %q", text, got, want)
		}
		if got, want := firstMatch(runes, lex), firstMatchReference(runes, lex); got != want {
			t.Fatalf("firstMatch(%q, %q) = %d, want %d", text, lex, got, want)
		}
	}
}

// ASCII text takes a byte path; it must cut the same snippet as the rune path
// every other text takes, wherever the match and the spaces fall.
func TestSnippetASCIIPathMatchesRunePath(t *testing.T) {
	t.Parallel()
	words := []string{"cache", "Caching", "E5032", "KB_RRF_K", "v2.3.1", "pgx/v5", "the", "a", "x", "replication",
		"LAG", "-", "(x)", "end.", "a.b", "_", "...", strings.Repeat("long", 70)}
	spaces := []string{" ", "  ", "\n", "\t", "\r\n", "\v\f ", "\n\n "}
	lexemes := [][]string{nil, {"cach"}, {"e5032"}, {"kb_rrf_k"}, {"v2.3.1"}, {"x"}, {"lag", "replic"}, {"écol", "cach"},
		{"ĸache"}, {"long"}, {"the"}}
	r := rand.New(rand.NewPCG(3, 4))
	for n := 0; n < 5000; n++ {
		text, lex := randomText(r, words, spaces, 150), lexemes[r.IntN(len(lexemes))]
		if _, ascii := collapseASCII(text); !ascii {
			t.Fatalf("collapseASCII(%q) says it is not ASCII", text)
		}
		if got, want := Snippet(text, lex), snippetRunes(text, lex); got != want {
			t.Fatalf("Snippet(%q, %q)\n got  %q\n want %q", text, lex, got, want)
		}
	}
	if _, ascii := collapseASCII("café au lait"); ascii {
		t.Fatal("collapseASCII took café for ASCII")
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
