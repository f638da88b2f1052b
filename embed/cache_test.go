package embed

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// countingEmbedder returns a vector derived from its name and the text and counts
// how often it is asked.
type countingEmbedder struct {
	name    string
	queries atomic.Int64
	docs    atomic.Int64
	fail    bool
}

func (c *countingEmbedder) Name() string { return c.name }
func (c *countingEmbedder) Dim() int     { return 2 }

func (c *countingEmbedder) vector(text string) []float32 {
	return []float32{float32(len(c.name)), float32(len(text))}
}

func (c *countingEmbedder) EmbedDocuments(_ context.Context, texts []string) ([][]float32, error) {
	c.docs.Add(1)
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = c.vector(t)
	}
	return out, nil
}

func (c *countingEmbedder) EmbedQuery(_ context.Context, text string) ([]float32, error) {
	c.queries.Add(1)
	if c.fail {
		return nil, errors.New("embedding service down")
	}
	return c.vector(text), nil
}

func TestCachedQueriesHit(t *testing.T) {
	t.Parallel()
	inner := &countingEmbedder{name: "fake"}
	c := NewCachedQueries(inner, 0, 0)
	ctx := context.Background()
	first, _ := c.EmbedQuery(ctx, "how do I deploy")
	first[0] = 99 // callers may scribble on their result; the cache must not care
	second, err := c.EmbedQuery(ctx, "how do I deploy")
	if err != nil {
		t.Fatal(err)
	}
	if got := inner.queries.Load(); got != 1 {
		t.Errorf("inner EmbedQuery calls = %d, want 1", got)
	}
	if second[0] != 4 || second[1] != 15 {
		t.Errorf("cached vector = %v, want [4 15]", second)
	}
	if _, err := c.EmbedQuery(ctx, "another question"); err != nil {
		t.Fatal(err)
	}
	if got := inner.queries.Load(); got != 2 {
		t.Errorf("a new text did not reach the embedder: %d calls", got)
	}
	if c.Name() != "fake" || c.Dim() != 2 {
		t.Errorf("Name/Dim = %q/%d, want the inner embedder's", c.Name(), c.Dim())
	}
}

func TestCachedQueriesPassesDocumentsThrough(t *testing.T) {
	t.Parallel()
	inner := &countingEmbedder{name: "fake"}
	c := NewCachedQueries(inner, 10, time.Minute)
	for range 2 {
		if _, err := c.EmbedDocuments(context.Background(), []string{"a", "b"}); err != nil {
			t.Fatal(err)
		}
	}
	if got := inner.docs.Load(); got != 2 {
		t.Errorf("inner EmbedDocuments calls = %d, want 2 (documents are never cached)", got)
	}
}

func TestCachedQueriesKeyIncludesName(t *testing.T) {
	t.Parallel()
	a, b := &countingEmbedder{name: "hash"}, &countingEmbedder{name: "openai:text-embedding-3-small"}
	ca, cb := NewCachedQueries(a, 10, time.Minute), NewCachedQueries(b, 10, time.Minute)
	ctx := context.Background()
	for range 2 {
		va, _ := ca.EmbedQuery(ctx, "same text")
		vb, _ := cb.EmbedQuery(ctx, "same text")
		if va[0] != 4 || vb[0] != 29 {
			t.Fatalf("vectors %v and %v: one embedder answered with the other's vector", va, vb)
		}
	}
	if a.queries.Load() != 1 || b.queries.Load() != 1 {
		t.Errorf("calls = %d and %d, want 1 each", a.queries.Load(), b.queries.Load())
	}
}

func TestCachedQueriesExpire(t *testing.T) {
	inner := &countingEmbedder{name: "fake"}
	c := NewCachedQueries(inner, 10, 200*time.Millisecond)
	ctx := context.Background()
	for _, wait := range []time.Duration{0, 0, 400 * time.Millisecond} {
		time.Sleep(wait)
		if _, err := c.EmbedQuery(ctx, "q"); err != nil {
			t.Fatal(err)
		}
	}
	if got := inner.queries.Load(); got != 2 {
		t.Errorf("inner calls = %d, want 2 (one before and one after expiry)", got)
	}
}

func TestCachedQueriesEvictsLeastRecentlyUsed(t *testing.T) {
	t.Parallel()
	inner := &countingEmbedder{name: "fake"}
	c := NewCachedQueries(inner, 2, time.Minute)
	ctx := context.Background()
	for _, q := range []string{"a", "b", "a", "c", "a", "b"} {
		if _, err := c.EmbedQuery(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	// a, b miss; a hits; c misses and evicts b; a hits; b misses.
	if got := inner.queries.Load(); got != 4 {
		t.Errorf("inner calls = %d, want 4", got)
	}
}

func TestCachedQueriesDoNotCacheErrors(t *testing.T) {
	t.Parallel()
	inner := &countingEmbedder{name: "fake", fail: true}
	c := NewCachedQueries(inner, 10, time.Minute)
	for range 2 {
		if _, err := c.EmbedQuery(context.Background(), "q"); err == nil {
			t.Fatal("expected the inner error")
		}
	}
	if got := inner.queries.Load(); got != 2 {
		t.Errorf("inner calls = %d, want 2: a failure must not be cached", got)
	}
}

func TestCachedQueriesConcurrent(t *testing.T) {
	t.Parallel()
	c := NewCachedQueries(NewHash(64), 5, time.Minute)
	want := mustQuery(t, NewHash(64), "text 3")
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				text := []string{"text 0", "text 1", "text 2", "text 3", "text 4", "text 5", "text 6"}[(g+i)%7]
				v, err := c.EmbedQuery(context.Background(), text)
				if err != nil {
					t.Error(err)
					return
				}
				if text == "text 3" && cosine(v, want) < 1-1e-6 {
					t.Error("a cached vector changed")
					return
				}
				v[0] = 42 // must not reach the cache
			}
		})
	}
	wg.Wait()
}
