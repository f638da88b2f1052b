// Package expiring is a bounded LRU whose entries also expire after a time to
// live, checked when read: unlike hashicorp's expirable LRU it starts no
// janitor goroutine, so a cache never outlives its owner (nothing to close).
package expiring

import (
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// Cache is safe for concurrent use.
type Cache[K comparable, V any] struct {
	lru *lru.Cache[K, entry[V]]
	ttl time.Duration
	now func() time.Time
}

type entry[V any] struct {
	value   V
	expires time.Time
}

// New returns a cache of at most size entries (at least 1), each kept for ttl.
func New[K comparable, V any](size int, ttl time.Duration) *Cache[K, V] {
	c, err := lru.New[K, entry[V]](max(size, 1))
	if err != nil {
		panic(err) // only for size <= 0, excluded above
	}
	return &Cache[K, V]{lru: c, ttl: ttl, now: time.Now}
}

// Get returns the value of key unless it is missing or expired (an expired
// entry is removed).
func (c *Cache[K, V]) Get(key K) (V, bool) {
	e, ok := c.lru.Get(key)
	if ok && c.now().Before(e.expires) {
		return e.value, true
	}
	if ok {
		c.lru.Remove(key)
	}
	var zero V
	return zero, false
}

// Add stores value under key for the cache's time to live, evicting the least
// recently used entry when full.
func (c *Cache[K, V]) Add(key K, value V) {
	c.lru.Add(key, entry[V]{value: value, expires: c.now().Add(c.ttl)})
}

// Remove drops key.
func (c *Cache[K, V]) Remove(key K) { c.lru.Remove(key) }

// Purge drops every key.
func (c *Cache[K, V]) Purge() { c.lru.Purge() }

// Keys lists the keys held, oldest first, expired ones included.
func (c *Cache[K, V]) Keys() []K { return c.lru.Keys() }

// Len is the number of entries held, expired ones included.
func (c *Cache[K, V]) Len() int { return c.lru.Len() }
