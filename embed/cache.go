package embed

import (
	"context"
	"slices"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// Query cache defaults: a chat session repeats or refines a handful of queries
// within a minute; more entries would mostly hold one-off questions.
const (
	DefaultQueryCacheSize = 50
	DefaultQueryCacheTTL  = 60 * time.Second
)

type cachedQueries struct {
	Embedder
	ttl   time.Duration
	cache *lru.Cache[string, cachedVector]
}

type cachedVector struct {
	vector  []float32
	expires time.Time
}

// NewCachedQueries wraps e so that repeated EmbedQuery calls for the same text
// within ttl skip the embedder (a remote call for "openai"). size <= 0 and
// ttl <= 0 mean the defaults. EmbedDocuments, Name and Dim pass through. Errors
// are not cached. The cache is safe for concurrent use. Entries expire when read
// after their ttl, so the cache needs no background goroutine (the expirable
// LRU's runs for the life of the process).
func NewCachedQueries(e Embedder, size int, ttl time.Duration) Embedder {
	if size <= 0 {
		size = DefaultQueryCacheSize
	}
	if ttl <= 0 {
		ttl = DefaultQueryCacheTTL
	}
	cache, err := lru.New[string, cachedVector](size)
	if err != nil {
		panic(err) // only for size <= 0, excluded above
	}
	return &cachedQueries{Embedder: e, ttl: ttl, cache: cache}
}

// EmbedQuery returns a copy of the cached vector, so a caller that modifies its
// result cannot corrupt later answers.
func (c *cachedQueries) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	// The name keeps vectors of different models apart should keys ever be
	// shared or logged; the NUL cannot occur in a name.
	key := c.Name() + "\x00" + text
	if hit, ok := c.cache.Get(key); ok {
		if time.Now().Before(hit.expires) {
			return slices.Clone(hit.vector), nil
		}
		c.cache.Remove(key)
	}
	v, err := c.Embedder.EmbedQuery(ctx, text)
	if err != nil {
		return nil, err
	}
	c.cache.Add(key, cachedVector{vector: slices.Clone(v), expires: time.Now().Add(c.ttl)})
	return v, nil
}
