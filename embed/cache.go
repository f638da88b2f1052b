package embed

import (
	"context"
	"slices"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
)

// Query cache defaults: a chat session repeats or refines a handful of queries
// within a minute; more entries would mostly hold one-off questions.
const (
	DefaultQueryCacheSize = 50
	DefaultQueryCacheTTL  = 60 * time.Second
)

type cachedQueries struct {
	Embedder
	cache *expirable.LRU[string, []float32]
}

// NewCachedQueries wraps e so that repeated EmbedQuery calls for the same text
// within ttl skip the embedder (a remote call for "openai"). size <= 0 and
// ttl <= 0 mean the defaults. EmbedDocuments, Name and Dim pass through. Errors
// are not cached. The cache is safe for concurrent use; the expirable LRU keeps
// one background goroutine per cache for the life of the process, so build one
// per embedder at startup, not per request.
func NewCachedQueries(e Embedder, size int, ttl time.Duration) Embedder {
	if size <= 0 {
		size = DefaultQueryCacheSize
	}
	if ttl <= 0 {
		ttl = DefaultQueryCacheTTL
	}
	return &cachedQueries{Embedder: e, cache: expirable.NewLRU[string, []float32](size, nil, ttl)}
}

// EmbedQuery returns a copy of the cached vector, so a caller that modifies its
// result cannot corrupt later answers.
func (c *cachedQueries) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	// The name keeps vectors of different models apart should keys ever be
	// shared or logged; the NUL cannot occur in a name.
	key := c.Name() + "\x00" + text
	if v, ok := c.cache.Get(key); ok {
		return slices.Clone(v), nil
	}
	v, err := c.Embedder.EmbedQuery(ctx, text)
	if err != nil {
		return nil, err
	}
	c.cache.Add(key, slices.Clone(v))
	return v, nil
}
