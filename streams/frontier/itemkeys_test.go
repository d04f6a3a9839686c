package frontier_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/dedup"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// itemKey is an item key fingerprint as the parse stage makes it (16 bytes).
func itemKey(i int) []byte {
	sum := sha256.Sum256(fmt.Appendf(nil, "product|%d", i))
	return sum[:16]
}

// emitItems emits n items with keys from..from+n-1, a thousand per call, and returns
// how many were added and how many dropped as duplicates.
func emitItems(t *testing.T, f *frontier.Frontier, from, n int) (added, dup int) {
	t.Helper()
	for i := from; i < from+n; i += 1000 {
		var items []frontier.ItemOut
		for j := i; j < min(i+1000, from+n); j++ {
			items = append(items, frontier.ItemOut{Key: itemKey(j), Payload: []byte(`{"_type":"product"}`)})
		}
		e, err := f.Emit(context.Background(), 0, nil, items)
		if err != nil {
			t.Fatal(err)
		}
		added, dup = added+e.Items, dup+e.DuplicateItems
	}
	return added, dup
}

// exactFrontier returns a frontier of l whose dedup is exact, planned for capacity
// URLs; it is closed when the test ends.
func exactFrontier(t *testing.T, rdb redis.UniversalClient, l streams.Layout, capacity int64) *frontier.Frontier {
	t.Helper()
	d, err := dedup.Open(context.Background(), rdb, l, dedup.Config{Mode: dedup.Exact, Capacity: capacity}, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := frontier.New(frontier.Config{Client: rdb, Layout: l, Dedup: d})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close(context.Background()) })
	return f
}

// In exact dedup mode item keys go into buckets like request fingerprints: no set, about
// a third of a set's bytes, and an item emitted again is still dropped.
func TestItemKeysGoIntoBucketsInExactMode(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	l := streams.NewLayout("itembuckets", 1)
	f := exactFrontier(t, rdb, l, 100_000)
	const n = 50_000
	if added, dup := emitItems(t, f, 0, n); added != n || dup != 0 {
		t.Fatalf("first emit: %d added, %d duplicates; want %d, 0", added, dup, n)
	}
	if added, dup := emitItems(t, f, n/2, n); added != n/2 || dup != n/2 {
		t.Fatalf("second emit: %d added, %d duplicates; want %d each", added, dup, n/2)
	}
	k := l.Parts[0]
	if typ := rdb.Type(ctx, k.ItemKeys).Val(); typ != "none" {
		t.Fatalf("item keys base key is a %s, want no key (buckets beside it)", typ)
	}
	var fields, bytes int64
	if err := rkit.ScanKeys(ctx, rdb, k.ItemKeys+":*", func(keys []string) error {
		for _, key := range keys {
			fields += rdb.HLen(ctx, key).Val()
			bytes += rdb.MemoryUsage(ctx, key, 0).Val()
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := int64(n + n/2); fields != want {
		t.Fatalf("buckets hold %d item keys, want %d", fields, want)
	}
	per := float64(bytes) / float64(fields)
	t.Logf("item keys: %d in buckets, %.1f bytes each", fields, per)
	if per > 40 {
		t.Fatalf("item keys cost %.1f bytes each in buckets, want at most 40 (a set costs ~72)", per)
	}
}

// A crawl begun when item keys were a set keeps using its set: an item stored then is
// still a duplicate, and new keys go into the same set.
func TestItemKeysOfALegacySetStayInTheSet(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	l := streams.NewLayout("itemlegacy", 1)
	k := l.Parts[0]
	if err := rdb.SAdd(ctx, k.ItemKeys, itemKey(1), itemKey(2)).Err(); err != nil {
		t.Fatal(err)
	}
	f := exactFrontier(t, rdb, l, 1000)
	if added, dup := emitItems(t, f, 0, 4); added != 2 || dup != 2 {
		t.Fatalf("%d added, %d duplicates; want 2 each (keys 1 and 2 were in the set)", added, dup)
	}
	if n := rdb.SCard(ctx, k.ItemKeys).Val(); n != 4 {
		t.Fatalf("legacy set holds %d keys, want 4", n)
	}
	var buckets int
	_ = rkit.ScanKeys(ctx, rdb, k.ItemKeys+":*", func(keys []string) error { buckets += len(keys); return nil })
	if buckets != 0 {
		t.Fatalf("%d item key buckets beside a legacy set, want 0", buckets)
	}
}
