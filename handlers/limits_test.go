package handlers_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// Links longer than max_url_length and items larger than max_item_size are dropped and
// counted; the rest of the crawl is untouched.
func TestOversizedLinksAndItemsAreDropped(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	rdb := srv.Client()
	site := newChainSite(20, 0)
	base := serve(t, site)
	sp := titleSpider("limits", base)
	good := sp.Callbacks["parse"]
	sp.Handle("parse", func(ctx context.Context, res *spiders.Response, out *spiders.Output) error {
		if err := good(ctx, res, out); err != nil {
			return err
		}
		long, err := res.Follow("/long?"+strings.Repeat("q", 3000), "parse")
		if err != nil {
			return err
		}
		out.Follow(long)
		out.Yield(spiders.NewItem("huge", map[string]any{"url": res.URL, "blob": strings.Repeat("x", 2<<20)}))
		return nil
	})
	sink := newMemSink()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// A runtime seed far over the seed size limit.
	if err := rdb.LPush(ctx, "limits:start_urls", `{"url": "`+base+`/3", "meta": {"x": "`+strings.Repeat("m", 100<<10)+`"}}`).Err(); err != nil {
		t.Fatal(err)
	}
	if err := runCrawl(ctx, t, rdb, sp, sink, nil); err != nil {
		t.Fatal(err)
	}
	wantAllPages(t, sink, base, 20)
	for key := range sink.keys() {
		if strings.HasPrefix(key, `["huge"`) {
			t.Fatalf("an item over max_item_size was stored: %.80s", key)
		}
	}
	if n := site.counts()["/long"]; n != 0 {
		t.Fatalf("a link over max_url_length was fetched %d times", n)
	}
	stats := rdb.HGetAll(ctx, streams.NewKeys("limits").Stats).Val()
	if stats["items_dropped_too_large"] != "20" || stats["dropped_url_too_long"] == "" || stats["seeds_too_large"] != "1" {
		t.Fatalf("stats: items_dropped_too_large=%q dropped_url_too_long=%q seeds_too_large=%q; want 20, some, 1",
			stats["items_dropped_too_large"], stats["dropped_url_too_long"], stats["seeds_too_large"])
	}
}
