package frontier_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/frontier"

	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// evalshaCalls returns how many EVALSHA calls the server has run since its stats reset.
func evalshaCalls(t *testing.T, srv *streamstest.Server) int {
	t.Helper()
	info := srv.Client().Info(context.Background(), "commandstats").Val()
	for _, l := range strings.Split(info, "\n") {
		if rest, ok := strings.CutPrefix(l, "cmdstat_evalsha:calls="); ok {
			var n int
			fmt.Sscanf(rest, "%d", &n)
			return n
		}
	}
	return 0
}

func TestConcurrentPagesShareOneEmitCallAndEachGetsItsOwnCounts(t *testing.T) {
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	k := streams.NewKeys("coalesce")
	f, err := frontier.New(frontier.Config{Client: rdb, Layout: streams.NewLayout(k.Crawl, 1), Linger: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close(context.Background())
	// Warm the script cache so the count below is of emit calls only.
	if _, err := enqueue(ctx, f, []frontier.Candidate{cand(1000, 0, 0)}); err != nil {
		t.Fatal(err)
	}
	rdb.ConfigResetStat(ctx)

	// 40 pages at once: each finds one new link and one known link, and yields one item;
	// pages 2i and 2i+1 are twins yielding the same item (same key).
	const pages = 40
	results := make([]frontier.Emitted, pages)
	var wg sync.WaitGroup
	for p := range pages {
		wg.Add(1)
		go func() {
			defer wg.Done()
			item := frontier.ItemOut{Key: fmt.Appendf(nil, "item-%d", p/2), Payload: fmt.Appendf(nil, "item of page %d", p)}
			e, err := f.Emit(ctx, 0, []frontier.Candidate{cand(p, 0, 1), cand(1000, 0, 0)}, []frontier.ItemOut{item})
			if err != nil {
				t.Error(err)
			}
			results[p] = e
		}()
	}
	wg.Wait()

	if calls := evalshaCalls(t, srv); calls < 1 || calls > 3 {
		t.Fatalf("%d pages made %d emit script calls, want them to share 1 to 3", pages, calls)
	}
	var sum frontier.Emitted
	for p, e := range results {
		if e.Requests != 1 || e.DuplicateRequests != 1 {
			t.Fatalf("page %d: %+v, want 1 request queued and 1 duplicate", p, e)
		}
		sum.Items += e.Items
		sum.DuplicateItems += e.DuplicateItems
	}
	if sum.Items != pages/2 || sum.DuplicateItems != pages/2 {
		t.Fatalf("items added %d, duplicates %d; want %d each (one of each twin pair)", sum.Items, sum.DuplicateItems, pages/2)
	}
	if n := rdb.XLen(ctx, k.Items).Val(); n != pages/2 {
		t.Fatalf("items stream holds %d, want %d", n, pages/2)
	}
	if n := rdb.SCard(ctx, k.ItemKeys).Val(); n != pages/2 {
		t.Fatalf("item keys recorded %d, want %d", n, pages/2)
	}
	if n := waiting(t, rdb, k); n != pages+1 {
		t.Fatalf("frontier holds %d requests, want %d", n, pages+1)
	}
	// Every item message has its own ID.
	msgs, _ := rdb.XRange(ctx, k.Items, "-", "+").Result()
	ids := map[string]bool{}
	for _, m := range msgs {
		ids[m.Values["_watermill_message_uuid"].(string)] = true
	}
	if len(ids) != pages/2 {
		t.Fatalf("%d distinct message IDs for %d items", len(ids), pages/2)
	}
}

func TestEmitAfterCloseFailsAndCloseRunsWhatWasQueued(t *testing.T) {
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	k := streams.NewKeys("closing")
	f, _ := frontier.New(frontier.Config{Client: rdb, Layout: streams.NewLayout(k.Crawl, 1), Linger: time.Second})
	done := make(chan error, 1)
	go func() {
		_, err := enqueue(ctx, f, []frontier.Candidate{cand(1, 0, 0)})
		done <- err
	}()
	time.Sleep(50 * time.Millisecond) // queued, lingering
	f.Close(context.Background())
	if err := <-done; err != nil {
		t.Fatalf("emit queued before Close: %v", err)
	}
	if n := waiting(t, rdb, k); n != 1 {
		t.Fatalf("frontier holds %d after Close ran the queued emit, want 1", n)
	}
	if _, err := enqueue(ctx, f, []frontier.Candidate{cand(2, 0, 0)}); err == nil {
		t.Fatal("emit after Close succeeded, want an error")
	}
}

func TestAPageWithHugelyManyLinksIsQueuedInBoundedChunks(t *testing.T) {
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	k := streams.NewKeys("huge")
	f, _ := frontier.New(frontier.Config{Client: rdb, Layout: streams.NewLayout(k.Crawl, 1), Linger: time.Second})
	defer f.Close(context.Background())
	if _, err := enqueue(ctx, f, []frontier.Candidate{cand(-1, 0, 0)}); err != nil { // load the script
		t.Fatal(err)
	}
	rdb.ConfigResetStat(ctx)
	var sitemap []frontier.Candidate
	for i := range 3000 { // 15,000 script arguments: 8 chunks of at most 400 requests
		sitemap = append(sitemap, cand(10_000+i, 0, 1))
	}
	var wg sync.WaitGroup
	for p := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if p == 2 {
				time.Sleep(200 * time.Millisecond) // arrives while the small pages' batch gathers
				if n, err := enqueue(ctx, f, sitemap); err != nil || n != len(sitemap) {
					t.Errorf("sitemap page queued %d, %v", n, err)
				}
				return
			}
			if n, err := enqueue(ctx, f, []frontier.Candidate{cand(p, 0, 1)}); err != nil || n != 1 {
				t.Errorf("page %d queued %d, %v", p, n, err)
			}
		}()
	}
	wg.Wait()
	if calls := evalshaCalls(t, srv); calls != 8 {
		t.Fatalf("%d script calls, want 8: the small pages with the sitemap's first chunk, then its 7 other chunks alone", calls)
	}
	if n := waiting(t, rdb, k); n != 1+4+3000 {
		t.Fatalf("frontier holds %d, want %d", n, 1+4+3000)
	}
}
