package dedup

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
)

// Bloom dedup: a scalable Bloom filter (Almeida et al. 2007) on Redis bitmaps, driven by
// Lua.
//
// Filter i takes Capacity*2^i URLs and is added when filter i-1 is full. Its error rate
// is 4/5 of the error budget the earlier filters left (budget = ErrorRate minus their
// false-positive rates when full), so however many filters a crawl grows, the rate of
// a lookup against all of them, at most the sum of theirs, stays under ErrorRate.
// (RedisBloom gives its first filter the whole ErrorRate and halves it for each next
// one, which bounds the sum by twice ErrorRate; halving the first filter's rate instead
// would cost 11 bits per URL, 1.5 bytes after allocator rounding.)
//
// A filter is one or more bitmaps ("parts"); a URL's k bits all go into one part,
// chosen by its fingerprint, so one BITFIELD sets or reads them. Each bitmap is
// created at its full length with one SETBIT, so Redis allocates it once, exactly, and
// its length is chosen so the allocation fills a jemalloc size class: jemalloc rounds
// a request up to the next class (four per power of two, up to 25% apart), so the
// bits up to the class boundary cost nothing and go into the filter. Of the layouts
// (part count, bitmap length, k) that reach the filter's rate, sizeBloomLevel takes
// the one with the smallest k among those within 5% of the least memory.
//
// Positions: the fingerprint is SHA-256 output, so its bytes are independent hashes:
// h1 = bytes 1-6 and h2 = bytes 7-12 (48 bits each, exact in Lua's doubles), part =
// bytes 13-16 modulo the part count; bit j = (h1 + j*h2') mod m with h2' = h2 mod m
// made odd (double hashing, Kirsch and Mitzenmacher).
//
// State: hash bloomKey with n (filters made) and c (URLs added to the newest). The
// next filter is made by the first URL added after the newest is full, so a crawl of
// exactly Capacity URLs never pays for a second filter.
//
// The trade-off: a false positive makes a URL that was never crawled look seen, and it
// is dropped. Inserting n distinct URLs into a filter of m bits with k hashes drops
// about the sum over x < n of (1 - e^(-kx/m))^k of them: at the default 1%, 0.155% of
// the URLs by the time the crawl reaches Capacity (the rate for the next URL climbs
// from 0 to 0.785% as the first filter fills), 0.59% by three times Capacity (1,548
// and 17,806 URLs for a capacity of 1,000,000; the rate of a lookup is then 0.95%). See
// Deduper.ExpectedFalsePositives.

const (
	// bloomShare is the share of the error budget left that the next filter takes. At
	// 0.8 the first filter, at about 10.5 bits per URL (1.25 MiB per million), reaches
	// its rate with k = 5 instead of 6: one BITFIELD operation less per URL.
	bloomShare = 0.8
	// bloomMaxLevels bounds the filters a crawl can grow (the last takes 2^23 times
	// Capacity: far past any crawl).
	bloomMaxLevels = 24
	// bloomMaxPartBytes bounds one bitmap (Redis strings stop at 512 MiB; big keys
	// are slow to migrate).
	bloomMaxPartBytes = 64 << 20
	// bloomMinPartBytes is the smallest part when a filter is split: under it the per
	// part spread of URLs would raise the false-positive rate.
	bloomMinPartBytes = 64 << 10
)

// bloomLevel is one filter of the chain.
type bloomLevel struct {
	Cap   int64   // URLs it takes before the next filter is added
	Parts int     // bitmaps
	Bytes int64   // length of each bitmap
	K     int     // bits per URL
	FP    float64 // false-positive rate when full
}

// bits returns the bits of one part.
func (l bloomLevel) bits() int64 { return l.Bytes * 8 }

// fpAt returns the false-positive rate of the filter holding x URLs.
func (l bloomLevel) fpAt(x float64) float64 {
	m := float64(l.bits()) * float64(l.Parts)
	return math.Pow(1-math.Exp(-float64(l.K)*x/m), float64(l.K))
}

// bloomLevels returns the filters of a chain for capacity and error rate. It must give
// the same answer for the same input in every build of the same version: running
// crawls depend on it.
func bloomLevels(capacity int64, errRate float64) []bloomLevel {
	var out []bloomLevel
	budget := errRate
	n := capacity
	for i := 0; i < bloomMaxLevels; i++ {
		l := sizeBloomLevel(n, budget*bloomShare)
		out = append(out, l)
		budget -= l.FP
		n *= 2
	}
	return out
}

// sizeBloomLevel sizes a filter for n URLs at false-positive rate p at most: the
// fewest bits per URL (k) among the layouts within 5% of the least memory, because
// each bit costs about 0.7 µs of Redis CPU per URL (a BITFIELD operation).
func sizeBloomLevel(n int64, p float64) bloomLevel {
	need := max(64, float64(n)*math.Log(1/p)/(math.Ln2*math.Ln2)/8) // bytes
	for {
		var cands []bloomLevel
		least := int64(math.MaxInt64)
		pmin := int64(math.Ceil(need / bloomMaxPartBytes))
		for parts := pmin; parts < pmin+16; parts++ {
			per := int64(math.Ceil(need / float64(parts)))
			if parts > pmin && per < bloomMinPartBytes {
				break
			}
			for _, alloc := range []int64{jemallocSize(per + sdsOverhead(per)), jemallocSize(jemallocSize(per+sdsOverhead(per)) + 1)} {
				l := bloomLevel{Cap: n, Parts: int(parts), Bytes: sdsFill(alloc)}
				m := float64(l.bits()) * float64(parts)
				for l.K = 1; l.K <= int(m/float64(n)*math.Ln2)+1; l.K++ {
					if l.FP = l.fpAt(float64(n)); l.FP <= p {
						cands = append(cands, l)
						least = min(least, alloc*parts)
						break
					}
				}
			}
		}
		var best bloomLevel
		for _, l := range cands {
			total := jemallocSize(l.Bytes+sdsOverhead(l.Bytes)) * int64(l.Parts)
			if float64(total) <= 1.05*float64(least) && (best.K == 0 || l.K < best.K || l.K == best.K && l.FP < best.FP) {
				best = l
			}
		}
		if best.K > 0 {
			return best
		}
		need *= 1.05 // no layout reaches p with an integer k: a little more memory
	}
}

// jemallocSize returns the size class jemalloc (5.x, 16-byte quantum, as Redis builds
// it) allocates for a request of n bytes: 8, 16, then multiples of 16 up to 128, then
// four classes per power of two.
func jemallocSize(n int64) int64 {
	switch {
	case n <= 8:
		return 8
	case n <= 128:
		return (n + 15) / 16 * 16
	}
	g := int64(1) << (63 - bits.LeadingZeros64(uint64(n-1))) // largest power of two < n
	step := g / 4
	return (n + step - 1) / step * step
}

// sdsOverhead returns the bytes Redis allocates besides the content of a string of n
// bytes made by SETBIT: the sds header for that length and the terminating zero.
func sdsOverhead(n int64) int64 {
	switch {
	case n < 1<<8:
		return 3 + 1
	case n < 1<<16:
		return 5 + 1
	default:
		return 9 + 1
	}
}

// sdsFill returns the longest string whose allocation is alloc bytes at most.
func sdsFill(alloc int64) int64 {
	var best int64
	for _, h := range []int64{4, 6, 10} {
		if n := alloc - h; n > best && sdsOverhead(n) == h {
			best = n
		}
	}
	if best == 0 {
		best = alloc - 10
	}
	return best
}

// luaBloomNative is the bloom-mode snippet for servers with RedisBloom (BF.*, also
// built into Redis 8): the filter is reserved by Open (reserveBloom). Not
// exercised by the tests: Redis 7.0 without the module has no BF.*.
const luaBloomNative = `
local function seen_add(base, fp) return redis.call('BF.ADD', base .. ':bf', fp) end
local function seen_has(base, fp) return redis.call('BF.EXISTS', base .. ':bf', fp) end
`

// hasBloomCommands reports whether the server has BF.ADD (RedisBloom module, Redis 8).
func hasBloomCommands(ctx context.Context, rdb redis.UniversalClient) (bool, error) {
	res, err := rdb.Do(ctx, "COMMAND", "INFO", "BF.ADD").Slice()
	if err != nil {
		return false, fmt.Errorf("dedup: COMMAND INFO BF.ADD: %w", err)
	}
	// Redis answers [nil] without the command, [[name, arity, ...]] with it. (miniredis
	// answers every command's info whatever is asked: look at the name.)
	if len(res) != 1 {
		return false, nil
	}
	info, ok := res[0].([]any)
	if !ok || len(info) == 0 {
		return false, nil
	}
	name, _ := info[0].(string)
	return strings.EqualFold(name, "bf.add"), nil
}

// checkBitfield fails when the server lacks BITFIELD_RO (Redis before 6.2, and the
// embedded miniredis), which the Lua Bloom filter needs.
func checkBitfield(ctx context.Context, rdb redis.UniversalClient, keys streams.Keys) error {
	err := rdb.Do(ctx, "BITFIELD_RO", bloomPartKey(keys, 0, 0), "GET", "u1", "0").Err()
	if err != nil && strings.Contains(strings.ToLower(err.Error()), "unknown command") {
		return fmt.Errorf("dedup: bloom dedup needs BITFIELD_RO (Redis 6.2 or later), which this server lacks (the embedded Redis does): use exact dedup: %w", err)
	}
	if err != nil {
		return fmt.Errorf("dedup: BITFIELD_RO: %w", err)
	}
	return nil
}

// reserveBloom creates the RedisBloom filter unless it exists. RedisBloom gives each
// added filter half the rate of the one before, so the sum of the rates stays under
// twice the first's: asking for half of ErrorRate keeps a crawl that outgrows its
// capacity under ErrorRate, as the Lua filter does (for 1.44 more bits per URL).
func reserveBloom(ctx context.Context, rdb redis.UniversalClient, keys streams.Keys, cfg Config) error {
	err := rdb.Do(ctx, "BF.RESERVE", bfKey(keys), cfg.ErrorRate/2, cfg.Capacity, "EXPANSION", 2).Err()
	if err != nil && !strings.Contains(strings.ToLower(err.Error()), "exists") {
		return fmt.Errorf("dedup: BF.RESERVE %s: %w", bfKey(keys), err)
	}
	return nil
}

// ExpectedFalsePositives returns, for a crawl that has recorded urls distinct URLs,
// the expected false-positive rate of a lookup now and the expected number of those
// URLs that were dropped as false positives on the way. Zero outside bloom mode; for
// RedisBloom it assumes Lua-mode sizing, so treat it as an estimate.
func (d *Deduper) ExpectedFalsePositives(urls int64) (rate, dropped float64) {
	if d.rec.Mode != Bloom {
		return 0, 0
	}
	return bloomExpected(bloomLevels(d.rec.Capacity, d.rec.ErrorRate), urls)
}

func bloomExpected(levels []bloomLevel, urls int64) (rate, dropped float64) {
	old := 0.0 // false-positive rate of the full filters
	left := float64(urls)
	for _, l := range levels {
		x := min(left, float64(l.Cap))
		const steps = 400
		for s := 0; s < steps; s++ {
			at := (float64(s) + 0.5) / steps * x
			dropped += x / steps * (1 - (1-old)*(1-l.fpAt(at)))
		}
		rate = 1 - (1-old)*(1-l.fpAt(x))
		left -= x
		if left <= 0 {
			break
		}
		old = 1 - (1-old)*(1-l.FP)
	}
	return rate, dropped
}

func describeBloom(levels []bloomLevel) string {
	var b strings.Builder
	for i, l := range levels[:3] {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "filter %d: %d URLs, %d x %d-byte bitmap, k=%d, %.3f%% when full",
			i, l.Cap, l.Parts, l.Bytes, l.K, 100*l.FP)
	}
	return "bloom: " + b.String() + "; ..."
}
