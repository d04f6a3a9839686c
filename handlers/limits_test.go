package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/streamcrawl/streamcrawl/handlers"
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

// TestLongOffsiteLinksAreNotWarnedAbout: a page's links over max_url_length to other
// hosts are dropped by scope, counted dropped_offsite with no warning; only a long link
// the spider would follow is warned about (and counted dropped_url_too_long). The
// offsite ones come first on the page, so a length check before the scope's would warn
// about them.
func TestLongOffsiteLinksAreNotWarnedAbout(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("q", 3000)
	base := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		for i := range 5 {
			fmt.Fprintf(w, `<a href="http://elsewhere%d.example/?%s">x</a> `, i, long)
		}
		fmt.Fprintf(w, `<a href="/long?%s">x</a>`, long)
	}))
	sp := followSpider("longlinks", base+"/", spiders.Settings{AllowNetworks: []string{"127.0.0.1/32"}})
	sp.AllowedDomains = []string{"127.0.0.1"}
	core, logs := observer.New(zapcore.WarnLevel)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := handlers.Crawl(ctx, sp, quick(handlers.Options{Sink: newMemSink(), Logger: zap.New(core)}))
	if err != nil {
		t.Fatal(err)
	}
	warned := logs.FilterMessage("link dropped: URL too long").All()
	if len(warned) != 1 || !strings.HasPrefix(warned[0].ContextMap()["url"].(string), base+"/long?") {
		t.Errorf("URL too long warnings %v, want one, for the in-scope link", warned)
	}
	if st.Stats["dropped_offsite"] != 5 || st.Stats["dropped_url_too_long"] != 1 {
		t.Errorf("dropped_offsite %d, dropped_url_too_long %d; want 5, 1", st.Stats["dropped_offsite"], st.Stats["dropped_url_too_long"])
	}
}
