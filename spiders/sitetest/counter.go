package sitetest

import (
	"sync"
	"sync/atomic"
)

// counter counts requests per path?query; add is lock-free once a key has been seen.
type counter struct {
	m     sync.Map // string -> *atomic.Int64
	total atomic.Int64
}

func (c *counter) add(key string) {
	c.total.Add(1)
	if v, ok := c.m.Load(key); ok {
		v.(*atomic.Int64).Add(1)
		return
	}
	v, _ := c.m.LoadOrStore(key, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
}

func (c *counter) snapshot() map[string]int {
	out := map[string]int{}
	c.m.Range(func(k, v any) bool {
		if n := v.(*atomic.Int64).Load(); n > 0 {
			out[k.(string)] = int(n)
		}
		return true
	})
	return out
}

func (c *counter) reset() {
	c.m.Clear()
	c.total.Store(0)
}

// Requests returns how many requests the site has served per canonical path?query
// (see Canonical; robots.txt fetches are included).
func (s *Site) Requests() map[string]int { return s.counter.snapshot() }

// TotalRequests returns the number of requests served since New or the last Reset.
func (s *Site) TotalRequests() int64 { return s.counter.total.Load() }

// Reset forgets every counted request.
func (s *Site) Reset() { s.counter.reset() }
