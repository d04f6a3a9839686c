package streams

import "strconv"

// Keys of the request dedup structures. They all start with Seen() and so share the
// crawl's hash tag; the Lua snippet of DedupConfig builds the same names from Seen(),
// which the caller passes as a KEYS entry (TestDedupKeyNamesMatchLua holds the two
// together).

// SeenBucket is the hash holding exact-mode fingerprints whose top bits are bucket.
func (k Keys) SeenBucket(bucket int) string { return k.Seen() + ":" + strconv.Itoa(bucket) }

// SeenOther is the hash holding exact-mode fingerprints that are not 16 bytes long.
func (k Keys) SeenOther() string { return k.Seen() + ":x" }

// SeenBloom is the hash describing the Lua Bloom filter: n (filters) and c (items in
// the newest filter).
func (k Keys) SeenBloom() string { return k.Seen() + ":bloom" }

// SeenBloomPart is the bitmap of part p of Bloom filter i (both from 0).
func (k Keys) SeenBloomPart(i, p int) string {
	return k.Seen() + ":bloom:" + strconv.Itoa(i) + ":" + strconv.Itoa(p)
}

// SeenBF is the RedisBloom filter used when the server has BF.ADD.
func (k Keys) SeenBF() string { return k.Seen() + ":bf" }
