package markdown

import (
	"fmt"
	"strings"
	"testing"
)

func TestCountTokens(t *testing.T) {
	t.Parallel()
	// want is cl100k_base's count (tiktoken), got is the estimate's; the cases
	// pin the estimate so a change to it shows up here and in the goldens.
	for _, tt := range []struct {
		in        string
		cl100k, n int
	}{
		{"", 0, 0},
		{"hello", 1, 1},
		{"hello world", 2, 2},
		{"Hello, world!", 4, 4},
		{"The cache layer uses Redis 7 with a write-through policy.", 13, 14},
		{"cache.Get(ctx, key)", 6, 7},
		{"https://grafana.example.com/d/cache", 8, 9},
		{"12345678", 3, 3},
		{"line one\nline two\n", 6, 6},
		{"--------------------------------", 1, 2},
		{"缓存层使用共享集群", 11, 11},
		{"naïve café", 4, 4},
		{"```go\nfunc main() {}\n```", 8, 9},
	} {
		if got := CountTokens(tt.in); got != tt.n {
			t.Errorf("CountTokens(%q) = %d, want %d (cl100k_base: %d)", tt.in, got, tt.n, tt.cl100k)
		}
	}
}

func TestCountTokensProperties(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"a", " ", "\n", "!", "é", "\xff", "x\x00y"} {
		if CountTokens(s) < 1 {
			t.Errorf("CountTokens(%q) = 0: any text costs at least a token", s)
		}
	}
	para := "The orders service reads prices through the shared cache; a miss costs 4 ms. "
	one := CountTokens(para)
	for _, k := range []int{2, 10, 100} {
		got := CountTokens(strings.Repeat(para, k))
		if got < k*one*9/10 || got > k*one*11/10 {
			t.Errorf("%d copies: %d tokens, one copy %d: the estimate should add up", k, got, one)
		}
	}
}

func BenchmarkCountTokens(b *testing.B) {
	s := strings.Repeat("The cache layer uses `cache.Get(ctx, key)`; entries expire after 300s (see https://example.com/x). ", 20)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		CountTokens(s)
	}
}

// bigDocument is a Markdown file of about n chunks at the default budget.
func bigDocument(n int) []byte {
	var b strings.Builder
	b.WriteString("---\ntype: module-kb\ntitle: Big\n---\n# Big\n\n")
	for i := range n {
		fmt.Fprintf(&b, "## Section %d\n\n", i)
		for range 3 {
			b.WriteString(strings.Repeat(fmt.Sprintf("Service %d reads prices through the shared cache and falls back to the database on a miss. ", i), 6))
			b.WriteString("\n\n")
		}
		b.WriteString("```go\nv, err := cache.Get(ctx, key)\nif err != nil {\n\treturn load(ctx, key)\n}\n```\n\n- one item\n- two items\n\n")
	}
	return []byte(b.String())
}

func BenchmarkParse10kChunks(b *testing.B) {
	src := bigDocument(10000)
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if _, err := Parse("big.md", src, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
