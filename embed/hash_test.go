package embed

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"
)

func cosine(a, b []float32) float64 {
	var dot float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
	}
	return dot // both are unit vectors
}

func norm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

func mustQuery(t testing.TB, e Embedder, text string) []float32 {
	t.Helper()
	v, err := e.EmbedQuery(context.Background(), text)
	if err != nil {
		t.Fatalf("EmbedQuery(%q): %v", text, err)
	}
	return v
}

func TestHashDimensionAndNorm(t *testing.T) {
	t.Parallel()
	texts := []string{
		"x",
		"Rotate the TLS certificates before they expire.",
		"Ünïcödé wörds, 日本語のテキスト, and emoji 🚀 are embedded too",
		strings.Repeat("a very long chunk of markdown text ", 500),
		"`code` **bold** [link](https://example.com/path?q=1)",
	}
	for _, dim := range []int{1, 7, 384, 768} {
		h := NewHash(dim)
		if h.Dim() != dim {
			t.Fatalf("Dim() = %d, want %d", h.Dim(), dim)
		}
		for _, text := range texts {
			v := mustQuery(t, h, text)
			if len(v) != dim {
				t.Errorf("dim %d: len = %d", dim, len(v))
			}
			if n := norm(v); math.Abs(n-1) > 1e-5 {
				t.Errorf("dim %d, %.20q: norm = %v, want 1", dim, text, n)
			}
		}
	}
	if got := NewHash(0).Dim(); got != DefaultHashDim {
		t.Errorf("NewHash(0).Dim() = %d, want %d", got, DefaultHashDim)
	}
}

// Text without any letter or digit has no features: the zero vector, not NaNs.
func TestHashNoFeatures(t *testing.T) {
	t.Parallel()
	h := NewHash(64)
	for _, text := range []string{"", "   ", "--- *** ---", "the of and"} {
		v := mustQuery(t, h, text)
		if n := norm(v); n != 0 {
			t.Errorf("%q: norm = %v, want the zero vector", text, n)
		}
	}
}

// Vectors are stored in the database and compared with query vectors computed in
// another process, possibly by another build: the same text must give the same
// vector. The pinned components also catch an accidental change to the feature
// function, which would silently invalidate every stored vector. They are
// compared with a tolerance because Go may fuse floating-point operations
// differently on other architectures.
func TestHashDeterministicAcrossProcesses(t *testing.T) {
	t.Parallel()
	type component struct {
		index int
		value float32
	}
	golden := []struct {
		text string
		dim  int
		want []component // the first non-zero components
	}{
		{"Rotate the TLS certificates before they expire. Rotate them again; rotate often!", 384,
			[]component{{7, -0.0849535}, {8, 0.0849535}, {15, -0.0849535}, {16, 0.0849535}, {18, -0.0849535}, {25, 0.0849535}}},
		{"How do we deploy the billing service to production?", 768,
			[]component{{4, -0.1091089}, {17, -0.1091089}, {33, -0.1091089}, {42, -0.1091089}, {48, 0.1091089}, {73, -0.1091089}}},
	}
	for _, g := range golden {
		a := mustQuery(t, NewHash(g.dim), g.text)
		b := mustQuery(t, NewHash(g.dim), g.text)
		var got []component
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
				t.Fatalf("%q: component %d differs between instances: %v vs %v", g.text, i, a[i], b[i])
			}
			if a[i] != 0 && len(got) < len(g.want) {
				got = append(got, component{i, a[i]})
			}
		}
		for i, w := range g.want {
			if got[i].index != w.index || math.Abs(float64(got[i].value-w.value)) > 1e-5 {
				t.Errorf("%q at dim %d: first non-zero components %v, want %v; if the feature function changed on purpose, update them and tell users to re-embed", g.text, g.dim, got, g.want)
				break
			}
		}
	}
}

func TestHashSimilarity(t *testing.T) {
	t.Parallel()
	h := NewHash(DefaultHashDim)
	cases := []struct {
		name, anchor, similar, unrelated string
	}{
		{"inflection", "database migrations failing", "the database migration failed", "quarterly marketing budget review"},
		{"shared rare term", "how do I rotate the TLS certificates", "certificate rotation runbook for TLS", "lunch menu for the team offsite"},
		{"compound word", "kubernetes deployment rollback", "rolling back a Kubernetes deploy", "coffee machine descaling"},
		{"typo", "authentication service outage", "authentcation servce outage", "holiday calendar for december"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := mustQuery(t, h, c.anchor)
			sim := cosine(a, mustQuery(t, h, c.similar))
			unr := cosine(a, mustQuery(t, h, c.unrelated))
			if sim <= unr+0.1 {
				t.Errorf("cos(anchor, similar) = %.3f, cos(anchor, unrelated) = %.3f: want similar clearly closer", sim, unr)
			}
		})
	}
}

// Case, punctuation and stop words do not change a vector: they carry no topic,
// and the keyword leg treats them the same way.
func TestHashNormalisation(t *testing.T) {
	t.Parallel()
	h := NewHash(DefaultHashDim)
	cases := [][2]string{
		{"PostgreSQL Vacuum", "postgresql vacuum"},
		{"deploy, then verify!", "deploy then verify"},
		{"the rotation of the keys", "rotation keys"},
	}
	for _, c := range cases {
		a, b := mustQuery(t, h, c[0]), mustQuery(t, h, c[1])
		if cos := cosine(a, b); cos < 1-1e-6 {
			t.Errorf("cos(%q, %q) = %v, want 1", c[0], c[1], cos)
		}
	}
}

func TestHashDocumentsMatchQueries(t *testing.T) {
	t.Parallel()
	h := NewHash(128)
	texts := []string{"alpha beta", "", "gamma delta epsilon", "alpha beta"}
	docs, err := h.EmbedDocuments(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != len(texts) {
		t.Fatalf("got %d vectors for %d texts", len(docs), len(texts))
	}
	for i, text := range texts {
		q := mustQuery(t, h, text)
		for k := range q {
			if q[k] != docs[i][k] {
				t.Fatalf("text %d: document and query vectors differ at %d", i, k)
			}
		}
	}
	// Rows share one backing array; appending to one must not overwrite the next.
	_ = append(docs[0], 42)
	if docs[1][0] == 42 {
		t.Error("appending to a returned vector overwrote its neighbour")
	}
}

func TestHashConcurrentUse(t *testing.T) {
	t.Parallel()
	h := NewHash(256)
	texts := []string{"first text about queues", "second text about caches", "third text about indexes"}
	want := make([][]float32, len(texts))
	for i, text := range texts {
		want[i] = mustQuery(t, h, text)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				k := (g + i) % len(texts)
				v, err := h.EmbedQuery(context.Background(), texts[k])
				if err != nil {
					t.Error(err)
					return
				}
				if cosine(v, want[k]) < 1-1e-6 {
					t.Errorf("concurrent call changed the vector of %q", texts[k])
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestHashHonoursCancelledContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	h := NewHash(32)
	if _, err := h.EmbedDocuments(ctx, []string{"a"}); !errors.Is(err, context.Canceled) {
		t.Errorf("EmbedDocuments: err = %v, want context.Canceled", err)
	}
	if _, err := h.EmbedQuery(ctx, "a"); !errors.Is(err, context.Canceled) {
		t.Errorf("EmbedQuery: err = %v, want context.Canceled", err)
	}
}

// syntheticChunks returns n chunks of about words words drawn from a Zipf-like
// vocabulary of made-up words, deterministic for a given seed.
func syntheticChunks(n, words int, seed uint64) []string {
	r := rand.New(rand.NewPCG(seed, seed))
	const letters = "etaoinshrdlcumwfgypbvkjxqz"
	vocab := make([]string, 5000)
	for i := range vocab {
		var b strings.Builder
		for range 2 + r.IntN(10) {
			b.WriteByte(letters[min(int(r.ExpFloat64()*6), len(letters)-1)])
		}
		vocab[i] = b.String()
	}
	zipf := rand.NewZipf(r, 1.1, 2, uint64(len(vocab)-1))
	chunks := make([]string, n)
	for i := range chunks {
		var b strings.Builder
		for w := range words {
			if w > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(vocab[zipf.Uint64()])
		}
		chunks[i] = b.String()
	}
	return chunks
}

// BenchmarkHashEmbed embeds 300-word chunks; the requirement is 10,000 chunks
// well under a minute on 2 cores.
func BenchmarkHashEmbed(b *testing.B) {
	for _, dim := range []int{384, 768} {
		b.Run(fmt.Sprintf("dim=%d", dim), func(b *testing.B) {
			h := NewHash(dim)
			chunks := syntheticChunks(256, 300, 1)
			ctx := context.Background()
			b.ReportAllocs()
			start := time.Now()
			n := 0
			for i := 0; b.Loop(); i++ {
				if _, err := h.EmbedDocuments(ctx, chunks[i%len(chunks):i%len(chunks)+1]); err != nil {
					b.Fatal(err)
				}
				n++
			}
			b.ReportMetric(float64(n)/time.Since(start).Seconds(), "chunks/s")
		})
	}
}
