package frontier_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// versionOut returns the ItemOut of version v of an item of price price, expecting
// the record expect.
func versionOut(t *testing.T, key string, price, v int, expect []byte) (frontier.ItemOut, []byte) {
	t.Helper()
	it := spiders.NewItem("product", map[string]any{"url": key, "price": price})
	rec, err := spiders.NewItemRecord(&it, v)
	if err != nil {
		t.Fatal(err)
	}
	return frontier.ItemOut{Key: []byte(key), Payload: fmt.Appendf(nil, "%s v%d price %d", key, v, price), Record: rec.Bytes(), Expect: expect}, rec.Bytes()
}

// Two pages yielding the same versioned item (same key, same values) at once add one
// version: the other is counted unchanged. A page whose version was made from a record
// another page has replaced since is told so (Stale) and adds nothing; made again from
// the stored record it is added. No key goes in the plain key set.
func TestVersionedItemsRacingOnAKeyAddOneVersion(t *testing.T) {
	t.Parallel()
	rdb := streamstest.Start(t).Client()
	ctx := context.Background()
	k := streams.NewKeys("versions")
	f, err := frontier.New(frontier.Config{Client: rdb, Layout: streams.NewLayout(k.Crawl, 1), Linger: 50 * time.Millisecond, ItemRecordBuckets: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close(context.Background())

	const keys = 20
	results := make([]frontier.Emitted, 2*keys)
	var wg sync.WaitGroup
	for p := range 2 * keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, _ := versionOut(t, fmt.Sprintf("http://shop/p/%d", p/2), 10, 1, nil)
			e, err := f.Emit(ctx, 0, nil, []frontier.ItemOut{out})
			if err != nil {
				t.Error(err)
			}
			results[p] = e
		}()
	}
	wg.Wait()
	var added, unchanged, stale int
	for _, e := range results {
		added, unchanged, stale = added+e.Items, unchanged+e.UnchangedItems, stale+len(e.Stale)
	}
	if added != keys || unchanged != keys || stale != 0 {
		t.Fatalf("twin pages: %d added, %d unchanged, %d stale; want %d, %d, 0", added, unchanged, stale, keys, keys)
	}
	if n := rdb.XLen(ctx, k.Items).Val(); n != keys {
		t.Fatalf("items stream holds %d, want %d", n, keys)
	}
	if n := rdb.Exists(ctx, k.ItemKeys).Val(); n != 0 {
		t.Fatal("versioned items recorded in the plain key set")
	}

	// Page A makes version 2 (price 11) and page B version 2 (price 12) from the same
	// version 1: A first, then B is stale.
	key := "http://shop/p/0"
	recs, err := f.ItemRecords(ctx, 0, [][]byte{[]byte(key), []byte("http://shop/none")})
	if err != nil || recs[0] == nil || recs[1] != nil {
		t.Fatalf("records read: %q, %v; want one, then none", recs, err)
	}
	a, aRec := versionOut(t, key, 11, 2, recs[0])
	b, _ := versionOut(t, key, 12, 2, recs[0])
	if e, err := f.Emit(ctx, 0, nil, []frontier.ItemOut{a}); err != nil || e.Items != 1 {
		t.Fatalf("page A: %+v, %v; want 1 added", e, err)
	}
	if e, err := f.Emit(ctx, 0, nil, []frontier.ItemOut{b}); err != nil || e.Items != 0 || len(e.Stale) != 1 || e.Stale[0] != 0 {
		t.Fatalf("page B: %+v, %v; want its item stale", e, err)
	}
	// A redelivery of page A (its old expectation) is now unchanged, not a version.
	if e, err := f.Emit(ctx, 0, nil, []frontier.ItemOut{a}); err != nil || e.UnchangedItems != 1 || e.Items != 0 {
		t.Fatalf("page A again: %+v, %v; want unchanged", e, err)
	}
	// B made again from the stored record (A's) is version 3.
	recs, err = f.ItemRecords(ctx, 0, [][]byte{[]byte(key)})
	if err != nil || string(recs[0]) != string(aRec) {
		t.Fatalf("record after A: %x, %v; want A's %x", recs[0], err, aRec)
	}
	b3, _ := versionOut(t, key, 12, 3, recs[0])
	if e, err := f.Emit(ctx, 0, nil, []frontier.ItemOut{b3}); err != nil || e.Items != 1 {
		t.Fatalf("page B again: %+v, %v; want 1 added", e, err)
	}
	if n := rdb.XLen(ctx, k.Items).Val(); n != keys+2 {
		t.Fatalf("items stream holds %d, want %d (versions 2 and 3 of one key)", n, keys+2)
	}
	recs, _ = f.ItemRecords(ctx, 0, [][]byte{[]byte(key)})
	if r, err := spiders.ParseItemRecord(recs[0]); err != nil || r.Version != 3 {
		t.Fatalf("stored record: version %d, %v; want 3", r.Version, err)
	}
}
