package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestItemsWithoutTheirKeyAreNeverMerged: 50 product pages, 10 with the key field sku.
// The 40 without it are not merged under one null key (39 of 50 were lost): each is a
// dead letter with the reason missing_key, counted; with key_missing: url each is
// keyed by its page and all 50 are stored.
func TestItemsWithoutTheirKeyAreNeverMerged(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	site := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		if r.URL.Path == "/" {
			var b strings.Builder
			for i := range 50 {
				fmt.Fprintf(&b, `<a href="/p/%d">p</a>`, i)
			}
			fmt.Fprintf(w, "<html><body>%s</body></html>", b.String())
			return
		}
		var i int
		fmt.Sscanf(r.URL.Path, "/p/%d", &i)
		sku := ""
		if i%5 == 0 {
			sku = fmt.Sprintf(`<span class="sku">SKU-%d</span>`, i)
		}
		fmt.Fprintf(w, `<html><body><div class="product"><h1>Product %d</h1>%s</div></body></html>`, i, sku)
	})
	base := serve(t, site)
	for _, tc := range []struct {
		name, keyMissing  string
		stored, dead, cnt int
	}{
		{"missingkey", "", 10, 40, 40},
		{"keybyurl", "key_missing: url", 50, 0, 0},
	} {
		sp, _, err := spiders.Parse(tc.name+".yaml", []byte(fmt.Sprintf(`name: %s
start_urls: [%s/]
follow: [{links: "a[href]"}]
items:
  - type: product
    when: div.product
    key: [sku]
    %s
    fields:
      name: h1
      sku: .sku
settings: {allow_networks: [127.0.0.1/32], obey_robots: false}
`, tc.name, base, tc.keyMissing)))
		if err != nil {
			t.Fatal(err)
		}
		sink := newMemSink()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		if err := runCrawl(ctx, t, srv.Client(), sp, sink, nil); err != nil {
			t.Fatal(err)
		}
		st, err := inspect.ReadStatus(ctx, srv.Client(), streams.NewLayout(tc.name, 1))
		if err != nil {
			t.Fatal(err)
		}
		if n := len(sink.keys()); n != tc.stored || st.DeadLetters != int64(tc.dead) || st.Stats["items_missing_key"] != int64(tc.cnt) {
			t.Errorf("%s: %d items stored, %d dead letters, items_missing_key %d; want %d, %d, %d", tc.name, n, st.DeadLetters,
				st.Stats["items_missing_key"], tc.stored, tc.dead, tc.cnt)
		}
		dead, err := inspect.ListDead(ctx, srv.Client(), streams.NewLayout(tc.name, 1), 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range dead {
			if !strings.HasPrefix(d.Error, "missing_key: item \"product\"") || !strings.Contains(d.Fields["payload"], "Product") {
				t.Errorf("dead letter %q with payload %.80q", d.Error, d.Fields["payload"])
			}
		}
		cancel()
	}
}
