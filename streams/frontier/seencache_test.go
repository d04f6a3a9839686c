package frontier

import (
	"crypto/sha256"
	"encoding/binary"
	"testing"
)

func fpOf(i int) []byte {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(i))
	sum := sha256.Sum256(b[:])
	return sum[:16]
}

// TestSeenCacheIsBounded: a cache of 4,096 fingerprints keeps its array (8 bytes a
// fingerprint) through 1,000,000 adds, keeps the recent ones and forgets most old ones.
func TestSeenCacheIsBounded(t *testing.T) {
	c := newSeenCache(4096)
	if len(c.tags) != 4096 {
		t.Fatalf("%d slots, want 4096", len(c.tags))
	}
	for i := 0; i < 1_000_000; i++ {
		c.add(fpOf(i))
	}
	if len(c.tags) != 4096 {
		t.Fatalf("%d slots after 1M adds, want 4096", len(c.tags))
	}
	recent, old := 0, 0
	for i := 1_000_000 - 1000; i < 1_000_000; i++ {
		if c.has(fpOf(i)) {
			recent++
		}
	}
	for i := 0; i < 1000; i++ {
		if c.has(fpOf(i)) {
			old++
		}
	}
	if recent < 990 || old != 0 {
		t.Fatalf("recent 1000 known %d (want >= 990), first 1000 known %d (want 0)", recent, old)
	}
	if c.has(fpOf(-1)) {
		t.Fatal("a fingerprint never added is known")
	}
}

// TestSeenCacheKeepsHotLinks: fingerprints met on every page (navigation) stay in the
// cache however many links are met once between them; links met once age out.
func TestSeenCacheKeepsHotLinks(t *testing.T) {
	c := newSeenCache(1024)
	const hot, pages = 100, 2000
	hotFps := make([][]byte, hot)
	for h := range hotFps {
		hotFps[h] = fpOf(-2 - h)
	}
	for page := 0; page < pages; page++ {
		for h, fp := range hotFps {
			if !c.has(fp) {
				if page > 0 {
					t.Fatalf("page %d: hot link %d forgotten", page, h)
				}
				c.add(fp)
			}
		}
		for j := 0; j < 20; j++ { // new links, met once: 40,000 through 1,024 slots
			c.add(fpOf(page*20 + j))
		}
	}
	if c.has(fpOf(0)) {
		t.Fatal("the first link met once is still known")
	}
	lookups, hits := c.stats()
	if want := int64(pages*hot + 1); lookups != want || hits != want-1-hot {
		t.Fatalf("lookups %d hits %d, want %d and %d", lookups, hits, want, want-1-hot)
	}
}

// TestSeenCacheClear: clear forgets every fingerprint.
func TestSeenCacheClear(t *testing.T) {
	c := newSeenCache(100)
	for i := 0; i < 50; i++ {
		c.add(fpOf(i))
	}
	if !c.has(fpOf(7)) {
		t.Fatal("fingerprint 7 not known after add")
	}
	c.clear()
	for i := 0; i < 50; i++ {
		if c.has(fpOf(i)) {
			t.Fatalf("fingerprint %d known after clear", i)
		}
	}
}
