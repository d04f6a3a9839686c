package dedup

import (
	"context"
	"fmt"
	"math"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// Exact dedup: a 16-byte fingerprint goes into one of 2^b small hashes ("buckets"),
// chosen by its top b bits. The field is the fingerprint minus its first b/8 whole
// bytes (the bucket implies them) and the value is empty, so Redis keeps a bucket as a
// listpack while it has at most hash-max-listpack-entries fields: 2 bytes of header per
// element, 14 to 16 bytes of fingerprint and 2 bytes of value per URL, against about
// 75 bytes for the same fingerprint in a plain set (a hash table entry, an sds string
// and the table slot).
//
// b is chosen from the planned capacity so that at capacity a bucket holds at most
// exactMaxFill fingerprints on average (between half that and that, b being whole),
// and in any case well under the listpack limit even after the random spread between
// buckets (the fullest of 2^b buckets sits under 5 standard deviations above the
// mean). Fuller buckets would save a little memory (the ~100 bytes a key costs,
// spread over more URLs) but HSETNX scans a listpack linearly: measured at 200,000
// URLs, a mean fill of 195 costs 20.9 bytes and 4.4 µs of Redis CPU per URL, 98 costs
// 21.5 bytes and 3.2 µs, 49 costs 22.4 bytes and 2.8 µs (plain set: 72 bytes, 1.3 µs).
//
// b is fixed for the crawl's life (stored in its dedup record). Past capacity the
// buckets keep growing as listpacks, slower to scan, until they cross
// hash-max-listpack-entries (512 by default: at 5 to 8 times capacity; 128 on some
// servers: at 1.5 to 3 times) and Redis converts each to a hash table, at about 74
// bytes per URL like the plain set. Dedup stays exact throughout. Measured with 1M
// URLs on the default 512: capacity 1M, 22.5 bytes and 3.7 µs per URL; capacity 250k
// (4x over), 21.4 bytes and 5.6 µs; 125k (8x), 30.5 bytes and 8.0 µs; 62.5k (16x),
// 73.9 bytes and 5.2 µs. Below capacity the ~100 bytes per key weigh more: capacity
// 10M, 32.4 bytes per URL.
//
// The listpack also needs hash-max-listpack-value (default 64) at 16 or more.
//
// Fingerprints that are not 16 bytes go to one hash of their own (otherKey), whole.

// exactMaxBits bounds the bucket count (2^24 keys is already far past any listpack gain).
const exactMaxBits = 24

// exactBucketBits returns b for capacity when buckets may hold maxEntries fields.
func exactBucketBits(capacity int64, maxEntries int) int {
	fill := exactFill(maxEntries)
	b := int(math.Ceil(math.Log2(float64(capacity) / fill)))
	return max(0, min(b, exactMaxBits))
}

// exactMaxFill is the most fingerprints per bucket, on average, at capacity.
const exactMaxFill = 100

// exactFill is the mean bucket fill at capacity: exactMaxFill, or less when the fullest
// bucket of many would not fit maxEntries (mean + 5 standard deviations, Poisson).
func exactFill(maxEntries int) float64 {
	// Solve f + 5*sqrt(f) = m for f.
	s := (-5 + math.Sqrt(25+4*float64(maxEntries))) / 2
	return max(1, min(exactMaxFill, s*s))
}

// listpackEntries returns the server's hash-max-listpack-entries, capped at 512 (a
// longer listpack costs more CPU per lookup than its memory saves). When CONFIG is
// refused (managed Redis) it assumes 128, which is safe if a little less compact.
func listpackEntries(ctx context.Context, rdb redis.UniversalClient) int {
	v, err := rdb.ConfigGet(ctx, "hash-max-listpack-entries").Result()
	if err != nil {
		return 128
	}
	n, err := strconv.Atoi(v["hash-max-listpack-entries"])
	if err != nil || n < 16 {
		return 128
	}
	return min(n, 512)
}

// luaExact is the exact-mode snippet for 2^bits buckets.
//
// Bucket = top bits of the fingerprint's first 4 bytes (exact in Lua's doubles);
// field = the fingerprint without the bits/8 whole bytes the bucket implies.
func luaExact(bits int) string {
	return fmt.Sprintf(`
local sd_div, sd_drop = %d, %d
local function sd_where(base, fp)
  if #fp ~= 16 then return base .. ':x', fp end
  local a, b, c, d = string.byte(fp, 1, 4)
  return base .. ':' .. math.floor((((a * 256 + b) * 256 + c) * 256 + d) / sd_div), string.sub(fp, sd_drop + 1)
end
local function seen_add(base, fp)
  local key, field = sd_where(base, fp)
  return redis.call('HSETNX', key, field, '')
end
local function seen_has(base, fp)
  local key, field = sd_where(base, fp)
  return redis.call('HEXISTS', key, field)
end
`, int64(1)<<(32-bits), bits/8)
}

// luaExactArg defines seen_add_arg: seen_add for a fingerprint that exactArg has already
// split into its bucket and field, so that the script does no arithmetic and no number
// formatting per fingerprint (measured: a quarter less Redis CPU per emit call).
const luaExactArg = `
local function seen_add_arg(base, a)
  local l = string.byte(a, 1)
  return redis.call('HSETNX', base .. ':' .. string.sub(a, 2, l + 1), string.sub(a, l + 2), '')
end
`

// exactArg returns fp for seen_add_arg: the length of its bucket key's suffix as one
// byte, the suffix (the bucket number, or "x" for a fingerprint that is not 16 bytes),
// and the field, as sd_where makes them.
func exactArg(fp []byte, bits int) string {
	suffix, field := "x", fp
	if len(fp) == 16 {
		suffix, field = strconv.Itoa(exactBucket(fp, bits)), fp[bits/8:]
	}
	b := make([]byte, 0, 1+len(suffix)+len(field))
	b = append(b, byte(len(suffix)))
	b = append(b, suffix...)
	return string(append(b, field...))
}

// exactBucket returns the bucket of a 16-byte fingerprint, as the Lua does.
func exactBucket(fp []byte, bits int) int {
	x := uint32(fp[0])<<24 | uint32(fp[1])<<16 | uint32(fp[2])<<8 | uint32(fp[3])
	return int(uint64(x) >> (32 - bits))
}

func describeExact(capacity int64, bits int) string {
	return fmt.Sprintf("exact: %d buckets (hashes), %.0f fingerprints each at capacity %d, %d-byte fields",
		1<<bits, float64(capacity)/float64(int64(1)<<bits), capacity, 16-bits/8)
}
