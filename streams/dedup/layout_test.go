package dedup

import (
	"context"
	"crypto/sha256"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestDedupKeyNamesMatchLua: the keys the Lua snippets touch are the ones the streams.Keys
// builders name (status, reset and cluster slot checks rely on them).
func TestDedupKeyNamesMatchLua(t *testing.T) {
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	fp := sha256.Sum256([]byte("x"))
	odd := []byte("not 16 bytes")

	k := streams.NewKeys("exact")
	d, err := Open(ctx, rdb, streams.NewLayout(k.Crawl, 1), Config{Capacity: 1_000_000}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Add(ctx, [][]byte{fp[:16], odd}); err != nil {
		t.Fatal(err)
	}
	bits := d.rec.BucketBits
	bucket := bucketKey(k, exactBucket(fp[:16], bits))
	if !rdb.HExists(ctx, bucket, string(fp[bits/8:16])).Val() {
		t.Fatalf("fingerprint not in %s (bucket bits %d); keys: %v", bucket, bits, rdb.Keys(ctx, "*").Val())
	}
	if !rdb.HExists(ctx, otherKey(k), string(odd)).Val() {
		t.Fatalf("odd fingerprint not in %s", otherKey(k))
	}
	if n := rdb.DBSize(ctx).Val(); n != 3 { // meta, bucket, other
		t.Fatalf("%d keys, want 3: %v", n, rdb.Keys(ctx, "*").Val())
	}
	rdb.FlushAll(ctx)

	k = streams.NewKeys("bloom")
	d, err = Open(ctx, rdb, streams.NewLayout(k.Crawl, 1), Config{Mode: Bloom, Capacity: 10_000_000}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Add(ctx, [][]byte{fp[:16]}); err != nil {
		t.Fatal(err)
	}
	l := bloomLevels(10_000_000, DefaultErrorRate)[0]
	want := map[string]bool{k.Meta: true, bloomKey(k): true}
	for p := 0; p < l.Parts; p++ {
		want[bloomPartKey(k, 0, p)] = true
		if n := rdb.StrLen(ctx, bloomPartKey(k, 0, p)).Val(); n != l.Bytes {
			t.Fatalf("%s is %d bytes, want %d", bloomPartKey(k, 0, p), n, l.Bytes)
		}
	}
	keys := rdb.Keys(ctx, "*").Val()
	for _, key := range keys {
		if !want[key] {
			t.Fatalf("unexpected key %s; want %v", key, want)
		}
	}
	if len(keys) != len(want) {
		t.Fatalf("keys %v, want %v", keys, want)
	}
	if got := rdb.HGetAll(ctx, bloomKey(k)).Val(); got["n"] != "1" || got["c"] != "1" {
		t.Fatalf("bloom state %v, want n=1 c=1", got)
	}
}

// TestBitmapSizingMatchesRedis: a bitmap of sdsFill(class) bytes costs exactly that
// jemalloc class in Redis, and one byte more costs the next class; so the sizing of
// Bloom filters wastes nothing to rounding.
func TestBitmapSizingMatchesRedis(t *testing.T) {
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	for _, want := range []int64{1280, 65536, 81920, 262144, 1310720, 12582912} {
		n := sdsFill(want)
		if got := jemallocSize(n + sdsOverhead(n)); got != want {
			t.Fatalf("jemallocSize(sdsFill(%d)) = %d", want, got)
		}
		usage := func(bytes int64) int64 {
			key := "b" + strconv.FormatInt(bytes, 10)
			rdb.SetBit(ctx, key, bytes*8-1, 0)
			return rdb.MemoryUsage(ctx, key, 0).Val()
		}
		fits, over := usage(n), usage(n+1)
		next := jemallocSize(want + 1)
		if over-fits != next-want {
			t.Fatalf("bitmap of %d bytes: MEMORY USAGE %d, one byte more %d: grew by %d, want %d (class %d -> %d)",
				n, fits, over, over-fits, next-want, want, next)
		}
		if fits-want > 100 || fits < want {
			t.Fatalf("bitmap of %d bytes: MEMORY USAGE %d, want %d plus the key's overhead", n, fits, want)
		}
	}
}

// seenEachBody runs seen_add one fingerprint at a time, as a script that dedups in a
// loop would.
//
// KEYS[1] -> sc:{c}:seen
// ARGV[i] -> fingerprint i
// Output: {1 if fingerprint i was new else 0, ...}
const seenEachBody = `
local out = {}
for i = 1, #ARGV do out[i] = seen_add(KEYS[1], ARGV[i]) end
return out
`

// seenHasEachBody is seenEachBody for seen_has.
const seenHasEachBody = `
local out = {}
for i = 1, #ARGV do out[i] = seen_has(KEYS[1], ARGV[i]) end
return out
`

// TestDedupOneByOneMatchesBatch: seen_add and seen_add_all give the same answers and
// leave byte-for-byte the same keys, through bloom filters filling and growing, and
// seen_has agrees with seen_has_all.
func TestDedupOneByOneMatchesBatch(t *testing.T) {
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	var fps [][]byte
	for i := 0; i < 12_000; i++ {
		sum := sha256.Sum256([]byte("fp/" + strconv.Itoa(i%9_000))) // a quarter repeats
		fps = append(fps, sum[:16])
	}
	fps = append(fps, []byte("short"), []byte("short"))
	probes := make([][]byte, 5000)
	for i := range probes {
		sum := sha256.Sum256([]byte("probe/" + strconv.Itoa(i)))
		probes[i] = sum[:16]
	}
	for _, mode := range []Mode{Exact, Bloom, Set} {
		t.Run(string(mode), func(t *testing.T) {
			cfg := Config{Mode: mode, Capacity: 2000} // bloom: filters of 2k, 4k, 8k
			one, err := Open(ctx, rdb, streams.NewLayout("one-"+string(mode), 1), cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			all, err := Open(ctx, rdb, streams.NewLayout("all-"+string(mode), 1), cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			gotOne, err := one.run(ctx, redis.NewScript(one.lua+seenEachBody), false, fps)
			if err != nil {
				t.Fatal(err)
			}
			gotAll, err := all.Add(ctx, fps)
			if err != nil {
				t.Fatal(err)
			}
			for i := range fps {
				if gotOne[i] != gotAll[i] {
					t.Fatalf("fingerprint %d: seen_add says new=%v, seen_add_all new=%v", i, gotOne[i], gotAll[i])
				}
			}
			if n := countTrue(gotAll); n < 8_900 || n > 9_001 {
				t.Fatalf("%d of 9001 distinct fingerprints new", n)
			}
			hasOne, err := one.run(ctx, redis.NewScript(one.lua+seenHasEachBody), true, probes)
			if err != nil {
				t.Fatal(err)
			}
			hasAll, err := one.Has(ctx, probes)
			if err != nil {
				t.Fatal(err)
			}
			for i := range probes {
				if hasOne[i] != hasAll[i] {
					t.Fatalf("probe %d: seen_has %v, seen_has_all %v", i, hasOne[i], hasAll[i])
				}
			}
			keysOne := rdb.Keys(ctx, "sc:{one-"+string(mode)+"}:seen*").Val()
			if mode == Bloom && len(keysOne) != 4 { // state + 3 filters of one part
				t.Fatalf("bloom keys %v, want the state and 3 filters", keysOne)
			}
			for _, k := range keysOne {
				other := strings.Replace(k, "{one-", "{all-", 1)
				if rdb.Type(ctx, k).Val() == "set" { // a hash table: DUMP order varies
					if d := rdb.SDiff(ctx, k, other).Val(); len(d) != 0 || rdb.SCard(ctx, k).Val() != rdb.SCard(ctx, other).Val() {
						t.Fatalf("%s and %s differ", k, other)
					}
					continue
				}
				a, b := rdb.Dump(ctx, k).Val(), rdb.Dump(ctx, other).Val()
				if a != b || a == "" {
					t.Fatalf("%s and %s differ", k, other)
				}
			}
			if n := len(rdb.Keys(ctx, "sc:{all-"+string(mode)+"}:seen*").Val()); n != len(keysOne) {
				t.Fatalf("batch made %d keys, one by one %d", n, len(keysOne))
			}
		})
	}
}

func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}
