package expiring

import (
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestCacheExpiresOnReadAndEvictsLeastRecent(t *testing.T) {
	now := time.Unix(0, 0)
	c := New[string, int](2, time.Minute)
	c.now = func() time.Time { return now }
	c.Add("a", 1)
	c.Add("b", 2)
	if v, ok := c.Get("a"); !ok || v != 1 {
		t.Fatalf("a = %d, %v", v, ok)
	}
	c.Add("c", 3) // evicts b, the least recently used
	if _, ok := c.Get("b"); ok {
		t.Error("b survived eviction")
	}
	now = now.Add(time.Minute)
	if _, ok := c.Get("a"); ok {
		t.Error("a outlived its time to live")
	}
	if c.Len() != 1 {
		t.Errorf("len = %d after the expired read, want 1 (c)", c.Len())
	}
	c.Remove("c")
	if len(c.Keys()) != 0 {
		t.Errorf("keys = %v", c.Keys())
	}
	c.Add("d", 4)
	c.Add("e", 5)
	c.Purge()
	if _, ok := c.Get("d"); ok || c.Len() != 0 {
		t.Errorf("after Purge: len %d, d found %v", c.Len(), ok)
	}
}
