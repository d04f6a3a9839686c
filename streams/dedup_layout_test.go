package streams

import (
	"context"
	"crypto/sha256"
	"strconv"
	"testing"

	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestDedupKeyNamesMatchLua: the keys the Lua snippets touch are the ones the Keys
// builders name (status, reset and cluster slot checks rely on them).
func TestDedupKeyNamesMatchLua(t *testing.T) {
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	fp := sha256.Sum256([]byte("x"))
	odd := []byte("not 16 bytes")

	k := NewKeys("exact")
	d, err := OpenDeduper(ctx, rdb, k, DedupConfig{Capacity: 1_000_000}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Add(ctx, [][]byte{fp[:16], odd}); err != nil {
		t.Fatal(err)
	}
	bits := d.rec.BucketBits
	bucket := k.SeenBucket(exactBucket(fp[:16], bits))
	if !rdb.HExists(ctx, bucket, string(fp[bits/8:16])).Val() {
		t.Fatalf("fingerprint not in %s (bucket bits %d); keys: %v", bucket, bits, rdb.Keys(ctx, "*").Val())
	}
	if !rdb.HExists(ctx, k.SeenOther(), string(odd)).Val() {
		t.Fatalf("odd fingerprint not in %s", k.SeenOther())
	}
	if n := rdb.DBSize(ctx).Val(); n != 3 { // meta, bucket, other
		t.Fatalf("%d keys, want 3: %v", n, rdb.Keys(ctx, "*").Val())
	}
	rdb.FlushAll(ctx)

	k = NewKeys("bloom")
	d, err = OpenDeduper(ctx, rdb, k, DedupConfig{Mode: DedupBloom, Capacity: 10_000_000}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Add(ctx, [][]byte{fp[:16]}); err != nil {
		t.Fatal(err)
	}
	l := bloomLevels(10_000_000, DefaultDedupErrorRate)[0]
	want := map[string]bool{k.Meta(): true, k.SeenBloom(): true}
	for p := 0; p < l.Parts; p++ {
		want[k.SeenBloomPart(0, p)] = true
		if n := rdb.StrLen(ctx, k.SeenBloomPart(0, p)).Val(); n != l.Bytes {
			t.Fatalf("%s is %d bytes, want %d", k.SeenBloomPart(0, p), n, l.Bytes)
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
	if got := rdb.HGetAll(ctx, k.SeenBloom()).Val(); got["n"] != "1" || got["c"] != "1" {
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
