package frontier

import "sync"

// seenCache remembers fingerprints known to be in Redis's seen set. When full it drops
// an arbitrary half: a forgotten fingerprint only costs one more SADD.
type seenCache struct {
	mu  sync.Mutex
	max int
	m   map[string]struct{}
}

func newSeenCache(max int) *seenCache {
	return &seenCache{max: max, m: make(map[string]struct{}, min(max, 1<<12))} // grows with the crawl: a small one never holds a 64K-entry table
}

func (c *seenCache) has(fp []byte) bool {
	c.mu.Lock()
	_, ok := c.m[string(fp)]
	c.mu.Unlock()
	return ok
}

func (c *seenCache) add(fp []byte) {
	c.mu.Lock()
	if len(c.m) >= c.max {
		n := 0
		for k := range c.m {
			delete(c.m, k)
			if n++; n >= c.max/2 {
				break
			}
		}
	}
	c.m[string(fp)] = struct{}{}
	c.mu.Unlock()
}

// clear forgets every fingerprint.
func (c *seenCache) clear() {
	c.mu.Lock()
	clear(c.m)
	c.mu.Unlock()
}
