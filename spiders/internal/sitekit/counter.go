package sitekit

import (
	"sync"
	"sync/atomic"
)

// Counter counts requests per key (a site's path?query). It is safe for concurrent
// use, and Add is lock-free once a key has been seen. The zero Counter is ready.
type Counter struct {
	m     sync.Map // string -> *atomic.Int64
	total atomic.Int64
}

// Add counts one request for key.
func (c *Counter) Add(key string) {
	c.total.Add(1)
	if v, ok := c.m.Load(key); ok {
		v.(*atomic.Int64).Add(1)
		return
	}
	v, _ := c.m.LoadOrStore(key, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
}

// Snapshot returns the count of every key counted since the last Reset.
func (c *Counter) Snapshot() map[string]int {
	out := map[string]int{}
	c.m.Range(func(k, v any) bool {
		if n := v.(*atomic.Int64).Load(); n > 0 {
			out[k.(string)] = int(n)
		}
		return true
	})
	return out
}

// Total returns the number of requests counted since the last Reset.
func (c *Counter) Total() int64 { return c.total.Load() }

// Reset forgets every counted request.
func (c *Counter) Reset() {
	c.m.Clear()
	c.total.Store(0)
}
