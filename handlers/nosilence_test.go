package handlers_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/spiders/demosite"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// What a crawl that does nothing says: every request dropped is an error naming the
// reason and the setting, most dropped a warning, a finished crawl says it is done, a
// run waiting on a crawl never seeded says what to run, and a selector that matches
// nothing is counted and named.

// linkSite is a home page linking to /p/1../p/n, each a page with an h1, and a
// robots.txt.
func linkSite(n int, robots string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, robots) })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		for i := 1; i <= n; i++ {
			fmt.Fprintf(w, `<a href="/p/%d">%d</a> `, i, i)
		}
	})
	mux.HandleFunc("/p/", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "<h1>%s</h1>", r.URL.Path) })
	return mux
}

// followSpider follows every link of the start page and yields nothing.
func followSpider(name, start string, s spiders.Settings) *spiders.Spider {
	sp := &spiders.Spider{Name: name, StartURLs: []string{start}, Settings: s}
	sp.Handle("parse", func(ctx context.Context, res *spiders.Response, out *spiders.Output) error {
		for _, l := range res.Links("a[href]") {
			if req, err := res.Follow(l, "parse"); err == nil {
				out.Follow(req)
			}
		}
		return nil
	})
	return sp
}

// captureStderr runs fn with os.Stderr going to a pipe and returns what was written.
// Not for parallel tests.
func captureStderr(t *testing.T, fn func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = w
	got := make(chan string)
	go func() { b, _ := io.ReadAll(r); got <- string(b) }()
	defer func() {
		os.Stderr = saved
		_ = w.Close()
	}()
	fn()
	os.Stderr = saved
	_ = w.Close()
	return <-got
}

// TestCrawlWhoseEveryRequestIsDroppedFails: the README's first Go spider, pointed at a
// loopback site without AllowNetworks, fetches nothing; Crawl says so with an error
// naming the guard and the setting, and with no Logger it says so on stderr too.
func TestCrawlWhoseEveryRequestIsDroppedFails(t *testing.T) {
	site := httptest.NewServer(linkSite(3, ""))
	defer site.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sp := followSpider("guarded", site.URL+"/", spiders.Settings{})
	var st *inspect.Status
	var err error
	stderr := captureStderr(t, func() { st, err = handlers.Crawl(ctx, sp, quick(handlers.Options{Sink: newMemSink()})) })
	want := "handlers: crawl guarded fetched no page: every request was dropped: 1 blocked by the network guard " +
		"(loopback/private address blocked: set AllowPrivateNetworks / allow_networks (Go: Settings.AllowNetworks: " +
		`[]string{"127.0.0.1/32"} or Settings.AllowPrivateNetworks; YAML: allow_networks: [127.0.0.1/32] or allow_private_networks: true)); ` +
		"start URL " + site.URL + "/: blocked by the network guard"
	if err == nil || err.Error() != want || !errors.Is(err, handlers.ErrEveryRequestDropped) || !errors.Is(err, handlers.ErrNoPageFetched) {
		t.Fatalf("error (-want +got):\n-%s\n+%v", want, err)
	}
	if st == nil || !st.Done || st.Stats["dropped_private_address"] != 1 || st.Stats["pages_fetched"] != 0 {
		t.Errorf("status %+v, want done with the one request dropped", st)
	}
	if !strings.Contains(stderr, "ERROR") || !strings.Contains(stderr, want) {
		t.Errorf("stderr of a Crawl without Logger %q, want the error logged", stderr)
	}
}

// TestCrawlWhoseStartIsDisallowedFails: robots.txt forbids everything: the error names
// robots.txt and obey_robots.
func TestCrawlWhoseStartIsDisallowedFails(t *testing.T) {
	t.Parallel()
	site := httptest.NewServer(linkSite(3, "User-agent: *\nDisallow: /\n"))
	defer site.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sp := followSpider("forbidden", site.URL+"/", spiders.Settings{AllowNetworks: []string{"127.0.0.1/32"}})
	st, err := handlers.Crawl(ctx, sp, quick(handlers.Options{Sink: newMemSink(), Logger: zap.NewNop()}))
	want := "handlers: crawl forbidden fetched no page: every request was dropped: 1 disallowed by robots.txt " +
		"(the site's robots.txt forbids them: Settings.ObeyRobots / obey_robots: false ignores it, where the site allows that); " +
		"start URL " + site.URL + "/: disallowed by robots.txt"
	if err == nil || err.Error() != want {
		t.Fatalf("error (-want +got):\n-%s\n+%v", want, err)
	}
	if st == nil || st.Stats["robots_disallowed"] != 1 {
		t.Errorf("status %+v, want robots_disallowed 1", st)
	}
}

// TestCrawlThatDropsMostRequestsWarns: the home page is fetched, its three links are
// disallowed: no error, a warning in the status and in the log.
func TestCrawlThatDropsMostRequestsWarns(t *testing.T) {
	t.Parallel()
	site := httptest.NewServer(linkSite(3, "User-agent: *\nDisallow: /p/\n"))
	defer site.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	core, logs := observer.New(zapcore.WarnLevel)
	sp := followSpider("mostly", site.URL+"/", spiders.Settings{AllowNetworks: []string{"127.0.0.1/32"}})
	st, err := handlers.Crawl(ctx, sp, quick(handlers.Options{Sink: newMemSink(), Logger: zap.New(core)}))
	if err != nil {
		t.Fatal(err)
	}
	want := "crawl mostly: most requests were dropped, 3 against 1 pages fetched: 3 disallowed by robots.txt " +
		"(the site's robots.txt forbids them: Settings.ObeyRobots / obey_robots: false ignores it, where the site allows that)"
	if !slices.Equal(st.Warnings, []string{want}) {
		t.Errorf("warnings (-want +got):\n-%q\n+%q", []string{want}, st.Warnings)
	}
	if n := logs.FilterMessage(want).Len(); n != 1 {
		t.Errorf("the warning was logged %d times, want once", n)
	}
}

// TestCrawlRunAgainOnceDoneSaysSo: a second Crawl of a finished crawl fetches nothing
// and says it is done and how to start over.
func TestCrawlRunAgainOnceDoneSaysSo(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	var requests atomic.Int64
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		linkSite(3, "").ServeHTTP(w, r)
	}))
	defer site.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sp := followSpider("twice", site.URL+"/", spiders.Settings{AllowNetworks: []string{"127.0.0.1/32"}})
	first, err := handlers.Crawl(ctx, sp, quick(handlers.Options{Redis: srv.URL(), Sink: newMemSink(), Logger: zap.NewNop()}))
	if err != nil || !first.Done || len(first.Warnings) != 0 {
		t.Fatalf("first run: %v, %+v", err, first)
	}
	before := requests.Load()
	core, logs := observer.New(zapcore.WarnLevel)
	again, err := handlers.Crawl(ctx, sp, quick(handlers.Options{Redis: srv.URL(), Sink: newMemSink(), Logger: zap.New(core)}))
	if err != nil {
		t.Fatal(err)
	}
	want := "crawl twice is already done; --fresh (Options.Fresh) or `streamcrawl reset --crawl twice` to crawl it again"
	if !slices.Equal(again.Warnings, []string{want}) || logs.FilterMessage(want).Len() != 1 {
		t.Errorf("warnings (-want +got):\n-%q\n+%q (logged %d times)", want, again.Warnings, logs.FilterMessage(want).Len())
	}
	if requests.Load() != before || again.Stats["pages_fetched"] != first.Stats["pages_fetched"] || !again.Done {
		t.Errorf("second run: %d requests to the site, pages_fetched %d (first %d), done %v; want none, the same, true",
			requests.Load()-before, again.Stats["pages_fetched"], first.Stats["pages_fetched"], again.Done)
	}
}

// TestUntilDoneOnACrawlNeverSeededSaysSo: a fetch stage told to stop once the crawl is
// done, on a crawl nobody seeded, says what to run instead of waiting in silence.
func TestUntilDoneOnACrawlNeverSeededSaysSo(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	want := "nothing seeded yet: run `streamcrawl seed SPIDER.yaml` (or LPUSH unseeded:start_urls URL); waiting for start URLs"
	said := make(chan struct{})
	discard := zapcore.NewCore(zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig()), zapcore.AddSync(io.Discard), zapcore.WarnLevel)
	core := zapcore.RegisterHooks(discard, func(e zapcore.Entry) error {
		if e.Level == zapcore.WarnLevel && e.Message == want {
			select {
			case said <- struct{}{}:
			default:
			}
		}
		return nil
	})
	sp := followSpider("unseeded", "http://127.0.0.1:1/", spiders.Settings{})
	done := make(chan error, 1)
	go func() {
		_, err := handlers.Crawl(ctx, sp, quick(handlers.Options{Redis: srv.URL(), Stages: []string{streams.StageFetch}, NoSeed: true,
			Logger: zap.New(core)}))
		done <- err
	}()
	select {
	case <-said:
	case err := <-done:
		t.Fatalf("the run ended (%v) without saying %q", err, want)
	case <-ctx.Done():
		t.Fatalf("no %q within a minute", want)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("interrupted run: %v", err)
	}
}

// TestSelectorThatMatchesNothing: a field whose selector matches nothing ("titel") is
// counted per page, named once in a warning after the first pages of its type, and an
// item whose every field is empty is not stored but counted.
func TestSelectorThatMatchesNothing(t *testing.T) {
	t.Parallel()
	site := demosite.New(120)
	shop := httptest.NewServer(site)
	defer shop.Close()
	src := fmt.Sprintf(`name: typo
start_urls: [%s/]
allowed_domains: [127.0.0.1]
follow:
  - links: "a[href]"
items:
  - type: product
    when: "div.product"
    key: [url]
    fields:
      url: "link[rel=canonical]::attr(href)"
      title: "titel::text"
  - type: page
    fields:
      heading: "titel::text"
settings:
  per_host_concurrency: 32
  allow_networks: [127.0.0.1/32]
  warn_empty_field_after: 5
`, shop.URL)
	sp, _, err := spiders.Parse("typo.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	core, logs := observer.New(zapcore.WarnLevel)
	sink := newMemSink()
	st, err := handlers.Crawl(ctx, sp, quick(handlers.Options{Sink: sink, Logger: zap.New(core)}))
	if err != nil {
		t.Fatal(err)
	}
	s := st.Stats
	products, pages := s["item_pages:product"], s["item_pages:page"]
	if products < int64(len(site.Products())) || s["field_pages:product.url"] != products || s["field_pages:product.title"] != 0 {
		t.Errorf("product counters: pages %d (the shop has %d products), url %d, title %d; want url on every page, title on none",
			products, len(site.Products()), s["field_pages:product.url"], s["field_pages:product.title"])
	}
	if _, ok := s["field_pages:product.title"]; !ok {
		t.Error("no counter for the field that never matched: status cannot show it")
	}
	if pages == 0 || s["field_pages:page.heading"] != 0 || s["items_empty"] != pages {
		t.Errorf("page counters: pages %d, heading %d, items_empty %d; want every page's item empty and not stored",
			pages, s["field_pages:page.heading"], s["items_empty"])
	}
	if got := len(sink.keys()); got != len(site.Products()) {
		t.Errorf("stored %d items, want the %d products only", got, len(site.Products()))
	}
	for _, want := range []string{
		`field "title" of item type "product" matched on none of the first 5 pages of that type: check its selector`,
		`field "heading" of item type "page" matched on none of the first 5 pages of that type: check its selector`,
	} {
		if n := logs.FilterMessage(want).Len(); n != 1 {
			t.Errorf("%q logged %d times, want once", want, n)
		}
	}
	if n := logs.FilterMessageSnippet("matched on none").Len(); n != 2 {
		t.Errorf("%d warnings about fields, want 2 (url always matched)", n)
	}
	types := handlers.FieldsOf(s)
	if len(types) != 2 || types[0].Type != "page" || types[1].Type != "product" || len(types[1].Fields) != 2 ||
		types[1].Fields[0] != (handlers.FieldCount{Field: "title", Pages: 0}) || types[1].Fields[1] != (handlers.FieldCount{Field: "url", Pages: products}) {
		t.Errorf("FieldsOf: %+v", types)
	}
}

// TestEmptyFieldWarnedOncePerCrawl: two parse processes of one crawl each see a field
// empty on their first pages; the crawl gets one warning, not one per process.
func TestEmptyFieldWarnedOncePerCrawl(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	sp := &spiders.Spider{Name: "once", Settings: spiders.Settings{WarnEmptyFieldAfter: 2},
		ItemFields: map[string][]string{"product": {"name", "price"}}}
	core, logs := observer.New(zapcore.WarnLevel)
	meta := streams.NewKeys("once").Meta
	page := []spiders.Item{spiders.NewItem("product", map[string]any{"name": "Lamp"})}
	for range 2 { // two processes
		c := handlers.NewFieldCheck(sp, srv.Client(), meta, nil, zap.New(core))
		for range 3 {
			if kept := c.Page(context.Background(), page); len(kept) != 1 {
				t.Fatalf("kept %d of an item with a name", len(kept))
			}
		}
	}
	want := `field "price" of item type "product" matched on none of the first 2 pages of that type: check its selector`
	if got := logs.All(); len(got) != 1 || got[0].Message != want {
		t.Errorf("warnings (-want +got):\n-%s\n+%v", want, got)
	}
}
