package frontier

import (
	"encoding/binary"
	"math/bits"
	"sync"
	"sync/atomic"
)

// seenWays is the number of slots of one set of the seen cache.
const seenWays = 8

// seenCache remembers fingerprints known to be in Redis's seen set, in a fixed array
// allocated once: a set-associative cache of 64-bit tags (8 bytes a fingerprint, no
// pointers for the GC to scan). A fingerprint's set is chosen by its bytes 8..16 and
// its tag is its bytes 0..8 (a fingerprint is a prefix of SHA-256, so both are
// uniform). Each set is kept in recency order: a hit moves the tag to the front, a new
// tag goes in front and the least recently met one of the set falls out. Links every
// page repeats (navigation) are met again and again and stay; a link met once ages out.
// A forgotten fingerprint only costs one more SADD.
//
// A false positive (a new URL whose tag equals one in its set) drops the URL: its
// chance is seenWays/2^64 per lookup (4e-19; 4e-9 over ten billion links), against
// about n²/2^129 for two of n URLs having the same 128-bit fingerprint in the seen set
// itself (1.5e-21 for a billion URLs).
type seenCache struct {
	mu   sync.Mutex
	mask uint64   // sets-1
	tags []uint64 // set s is tags[s*seenWays : (s+1)*seenWays]; 0 is an empty slot

	lookups, hits atomic.Int64
}

// newSeenCache returns a cache of at least max fingerprints (rounded up to a power of
// two number of sets; max*8 bytes, about).
func newSeenCache(max int) *seenCache {
	sets := uint64(1)
	if max > seenWays {
		sets = 1 << bits.Len64(uint64(max-1)/seenWays)
	}
	return &seenCache{mask: sets - 1, tags: make([]uint64, sets*seenWays)}
}

// slot returns fp's set and tag. A fingerprint shorter than 16 bytes (tests) is padded
// with zeros.
func (c *seenCache) slot(fp []byte) (set []uint64, tag uint64) {
	var b [16]byte
	copy(b[:], fp)
	if tag = binary.LittleEndian.Uint64(b[:8]); tag == 0 {
		tag = 1 // 0 marks an empty slot
	}
	s := binary.LittleEndian.Uint64(b[8:]) & c.mask
	return c.tags[s*seenWays : (s+1)*seenWays], tag
}

// has reports whether fp is in the cache, and makes it the set's most recent.
func (c *seenCache) has(fp []byte) bool {
	c.lookups.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	set, tag := c.slot(fp)
	for i, t := range set {
		if t == tag {
			copy(set[1:i+1], set[:i])
			set[0] = tag
			c.hits.Add(1)
			return true
		}
	}
	return false
}

// add puts fp in front of its set (moving it there when it is in already).
func (c *seenCache) add(fp []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	set, tag := c.slot(fp)
	i := len(set) - 1 // the least recent falls out
	for j, t := range set {
		if t == tag || t == 0 {
			i = j
			break
		}
	}
	copy(set[1:i+1], set[:i])
	set[0] = tag
}

// clear forgets every fingerprint.
func (c *seenCache) clear() {
	c.mu.Lock()
	clear(c.tags)
	c.mu.Unlock()
}

// stats returns the lookups (has) so far and how many found the fingerprint.
func (c *seenCache) stats() (lookups, hits int64) {
	return c.lookups.Load(), c.hits.Load()
}
