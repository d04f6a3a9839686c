package handlers_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/processors"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/spiders/demosite"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

func readJSONL(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s: bad line %q: %v", path, sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

func TestReplayParseWithAFixedSpiderFetchesNothing(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	rdb := srv.Client()
	site := demosite.New(500)
	base := serve(t, site) + "/"
	sp, _, err := spiders.Parse("shop.yaml", []byte(site.SpiderYAML("shop", base)))
	if err != nil {
		t.Fatal(err)
	}
	// Responses are kept for replay only when the spider asks (default: until parsed).
	sp.Settings.Retention = map[string]spiders.StreamRetention{"responses": {MaxAge: time.Hour}}
	dir := t.TempDir()
	first, err := processors.OpenJSONL(filepath.Join(dir, "first.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	if err := runCrawl(ctx, t, rdb, sp, first, nil); err != nil {
		t.Fatal(err)
	}
	products := len(site.Products())
	if got := len(readJSONL(t, filepath.Join(dir, "first.jsonl"))); got != products {
		t.Fatalf("crawl stored %d items, want %d", got, products)
	}
	for _, it := range readJSONL(t, filepath.Join(dir, "first.jsonl")) {
		if _, ok := it["description"]; ok {
			t.Fatal("the first spider has no description field")
		}
	}

	// The fix: a new field. Replay parses the stored responses; nothing is fetched.
	site.Reset()
	fixed := strings.Replace(site.SpiderYAML("shop", base), `      sku: ".sku::text"`,
		"      sku: \".sku::text\"\n      description: \".description::text\"", 1)
	sp2, _, err := spiders.Parse("shop-fixed.yaml", []byte(fixed))
	if err != nil {
		t.Fatal(err)
	}
	second, err := processors.OpenJSONL(filepath.Join(dir, "second.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := handlers.Replay(ctx, handlers.ReplayConfig{Client: rdb, Crawl: "shop", Spider: sp2,
		Stage: streams.StageParse, From: "0", Sink: second})
	if err != nil {
		t.Fatal(err)
	}
	if n := site.TotalRequests(); n != 0 {
		t.Fatalf("the site saw %d requests during the replay, want 0", n)
	}
	items := readJSONL(t, filepath.Join(dir, "second.jsonl"))
	if len(items) != products {
		t.Fatalf("replay wrote %d items, want %d (result %+v)", len(items), products, res)
	}
	for _, it := range items {
		if d, _ := it["description"].(string); d == "" {
			t.Fatalf("replayed item without the new field: %v", it)
		}
	}
	if res.RequestsDiscarded == 0 {
		t.Error("the replay reported no links left unfollowed; it should count them")
	}
}

func TestPostProcessorGroupsEachSeeEveryItemOnce(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	rdb := srv.Client()
	site := newChainSite(120, 0)
	base := serve(t, site)
	sp := titleSpider("pp", base)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	store := newMemSink()
	errs := make(chan error, 2)
	sinks := []*memSink{newMemSink(), newMemSink()}
	for i, g := range []string{"search-index", "warehouse"} {
		go func() {
			errs <- handlers.Process(ctx, handlers.ProcessConfig{Client: rdb, Crawl: "pp", Group: g,
				Sink: sinks[i], UntilDone: true, Consumer: g + "-1"})
		}()
	}
	if err := runCrawl(ctx, t, rdb, sp, store, nil); err != nil {
		t.Fatal(err)
	}
	for range sinks {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for name, s := range map[string]*memSink{"store": store, "search-index": sinks[0], "warehouse": sinks[1]} {
		keys := s.keys()
		if len(keys) != 120 {
			t.Errorf("group %s saw %d distinct items, want 120", name, len(keys))
		}
		for k, n := range keys {
			if n != 1 {
				t.Errorf("group %s got %s %d times, want once", name, k, n)
			}
		}
	}
}
