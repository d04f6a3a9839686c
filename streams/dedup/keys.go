package dedup

import (
	"strconv"

	"github.com/streamcrawl/streamcrawl/streams"
)

// Keys of the request dedup structures of one partition (k). They all start with
// k.Seen and so share the crawl's hash tag; the Lua snippets build the same names
// from Seen, which the caller passes as a KEYS entry (TestDedupKeyNamesMatchLua holds
// the two together).

// bucketKey is the hash holding exact-mode fingerprints whose top bits are bucket.
func bucketKey(k streams.Keys, bucket int) string { return k.Seen + ":" + strconv.Itoa(bucket) }

// otherKey is the hash holding exact-mode fingerprints that are not 16 bytes long.
func otherKey(k streams.Keys) string { return k.Seen + ":x" }

// bloomKey is the hash describing the Lua Bloom filter: n (filters) and c (items in the
// newest filter).
func bloomKey(k streams.Keys) string { return k.Seen + ":bloom" }

// bloomPartKey is the bitmap of part p of Bloom filter i (both from 0).
func bloomPartKey(k streams.Keys, i, p int) string {
	return k.Seen + ":bloom:" + strconv.Itoa(i) + ":" + strconv.Itoa(p)
}

// bfKey is the RedisBloom filter used when the server has BF.ADD.
func bfKey(k streams.Keys) string { return k.Seen + ":bf" }

// genBase is the base of expiry generation gen (see Expiry): its keys are those of
// the mode with genBase in place of k.Seen.
func genBase(k streams.Keys, gen int64) string { return k.Seen + ":g" + strconv.FormatInt(gen, 10) }

// gensKey is the sorted set of the expiry generations written (member and score: the
// generation).
func gensKey(k streams.Keys) string { return k.Seen + ":gens" }

// seenPattern matches every dedup key of the crawl (for SCAN), the legacy set included.
func seenPattern(k streams.Keys) string { return globEscape(k.Seen) + "*" }

// globEscape escapes the characters SCAN MATCH treats as special.
func globEscape(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', ']', '\\':
			out = append(out, '\\')
		}
		out = append(out, s[i])
	}
	return string(out)
}
