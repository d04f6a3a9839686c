package handlers_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/handlers/fetch/browser"
	"github.com/streamcrawl/streamcrawl/handlers/fetch/browser/browsertest"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/spiders/jssite"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// renderCrawl crawls the JS site at base with the spider of render (true, false,
// auto), one browser of 4 tabs, and returns what the sink holds and the crawl's stats.
func renderCrawl(t *testing.T, rdb redis.UniversalClient, site *jssite.Site, base, name, render string, mod func(*spiders.Spider)) (*memSink, map[string]int64) {
	t.Helper()
	sp, _, err := spiders.Parse(name+".yaml", []byte(site.SpiderYAML(name, base, render)))
	if err != nil {
		t.Fatal(err)
	}
	if mod != nil {
		mod(sp)
	}
	return renderSpider(t, rdb, sp, 4)
}

// renderSpider crawls sp with one browser of tabs tabs, and returns what the sink holds
// and the crawl's stats; no chromium process may be left after it.
func renderSpider(t *testing.T, rdb redis.UniversalClient, sp *spiders.Spider, tabs int) (*memSink, map[string]int64) {
	t.Helper()
	// A bound for a crawl that hangs, not a speed: on a loaded machine (load 14 on 2
	// cores) renders run into their deadlines and retries, and the 3 crawls of the
	// JavaScript shop took past 2 minutes.
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	sink := newMemSink()
	exe := browsertest.Chromium(t)
	if err := runCrawl(ctx, t, rdb, sp, sink, func(c *handlers.RunConfig) {
		c.Browser = &browser.Config{ExecPath: exe, Browsers: 1, Tabs: tabs}
	}); err != nil {
		t.Fatal(err)
	}
	stats, err := rdb.HGetAll(ctx, streams.NewKeys(sp.Name).Stats).Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for k, v := range stats {
		var n int64
		json.Unmarshal([]byte(v), &n) //nolint:errcheck // counters are integers
		out[k] = n
	}
	if left := browsertest.Processes(); len(left) > 0 {
		t.Errorf("chromium processes left after the crawl: %v", left)
	}
	return sink, out
}

// itemsOf returns the sink's items by key field (sku or slug) with their fields.
func itemsOf(s *memSink) map[string]map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]map[string]string{}
	for _, it := range s.last {
		f := map[string]string{}
		for k, v := range it.Fields {
			f[k], _ = v.(string)
		}
		key := f["sku"]
		if it.Type == "guide" {
			key = f["slug"]
		}
		out[key] = f
	}
	return out
}

// TestRenderedCrawlStoresTheTruth crawls the JavaScript shop with render: true (its
// items are the site's truth: every product, reached by scrolling categories, and
// every guide), with render: false (nothing: the pages are empty shells), and with
// render: auto (the same items, at least 40% fewer pages rendered: its guide and brand
// pages, plain HTML, go over HTTP once sampled). The status page's script never
// reaches the forbidden server nor the metadata address; images are blocked; the URLs
// the app pushed to the history are crawled too.
func TestRenderedCrawlStoresTheTruth(t *testing.T) {
	browsertest.Chromium(t)
	// The forbidden server is on loopback too, but not on the 127.0.0.1/32 the spider
	// allows: the guard refuses it as it would 10.0.0.0/8.
	var forbiddenHits atomic.Int64
	forbidden := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { forbiddenHits.Add(1) }))
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	forbidden.Listener.Close()
	forbidden.Listener = ln
	forbidden.Start()
	defer forbidden.Close()
	site := jssite.New(20)
	site.SetForbidden(ln.Addr().String())
	srv := streamstest.Start(t)
	base := serve(t, site) + "/"
	want := site.ExpectedItems()

	sink, stats := renderCrawl(t, srv.Client(), site, base, "jsrender", "true", nil)
	checkTruth(t, "render: true", want, itemsOf(sink))
	if n := forbiddenHits.Load(); n != 0 {
		t.Errorf("the forbidden server was asked %d times", n)
	}
	req := site.Requests()
	if req["/status"] == 0 || stats["render_subrequests_blocked"] < 2 {
		t.Errorf("status page requested %d times, %d sub-requests blocked; want it rendered and its 2 fetches blocked",
			req["/status"], stats["render_subrequests_blocked"])
	}
	if req["/img.png"] != 0 || stats["render_resources_blocked"] == 0 {
		t.Errorf("images requested %d times (blocked %d)", req["/img.png"], stats["render_resources_blocked"])
	}
	pushed := 0
	for u := range req {
		if strings.HasPrefix(u, "/c/") && strings.Contains(u, "?page=") {
			pushed++
		}
	}
	if pushed == 0 {
		t.Errorf("no category page URL the app pushed to the history was crawled: %v", keysOf(req))
	}
	rendered := stats["pages_rendered"]
	if rendered == 0 || rendered != stats["pages_fetched"] {
		t.Errorf("rendered %d of %d pages fetched", rendered, stats["pages_fetched"])
	}

	site.Reset()
	sink, stats = renderCrawl(t, srv.Client(), site, base, "jsplain", "false", nil)
	if n := len(itemsOf(sink)); n != 0 || stats["pages_rendered"] != 0 {
		t.Errorf("render: false stored %d items and rendered %d pages, want 0 and 0", n, stats["pages_rendered"])
	}

	sink, stats = renderCrawl(t, srv.Client(), site, base, "jsauto", "auto", nil)
	checkTruth(t, "render: auto", want, itemsOf(sink))
	auto := stats["pages_rendered"]
	if fewer := 1 - float64(auto)/float64(rendered); fewer < 0.40 {
		t.Errorf("render: auto rendered %d pages, render: true %d: %.0f%% fewer, want at least 40%%", auto, rendered, 100*fewer)
	}
	t.Logf("render: true rendered %d pages, auto %d (%d over HTTP, %d samples, %d checks)", rendered, auto,
		stats["render_auto_http"], stats["render_auto_samples"], stats["render_auto_checks"])
	st, err := inspect.ReadStatus(context.Background(), srv.Client(), streams.NewLayout("jsauto", 1))
	if err != nil {
		t.Fatal(err)
	}
	decisions := st.Render
	got := map[string]string{}
	for _, d := range decisions {
		got[d.PageType] = d.Mode
	}
	// The follow rules of the site's spider: categories, products, guides, brands.
	for typ, mode := range map[string]string{"follow[0]": "browser", "follow[1]": "browser", "follow[2]": "http", "follow[3]": "http"} {
		if got[typ] != mode {
			t.Errorf("page type %s: %q, want %q (all: %v)", typ, got[typ], mode, got)
		}
	}
}

// checkTruth compares the items stored with the site's truth.
func checkTruth(t *testing.T, what string, want, got map[string]map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d items stored, the site's truth has %d", what, len(got), len(want))
	}
	for k, w := range want {
		if g, ok := got[k]; !ok {
			t.Errorf("%s: item %s missing", what, k)
		} else if !mapsEqual(g, w) {
			t.Errorf("%s: item %s: got %v, want %v", what, k, g, w)
		}
	}
}

// TestRenderedCrawlIsPolite crawls with rendering under a per-host delay and one
// request at a time: the documents the browser loads (its main navigations) start at
// least the delay apart, but for a script's redirect, which belongs to its page's turn
// as an HTTP redirect does. Favicons are never asked for.
func TestRenderedCrawlIsPolite(t *testing.T) {
	browsertest.Chromium(t)
	site := jssite.New(4)
	var mu sync.Mutex
	type start struct {
		at   time.Time
		path string
	}
	var starts []start
	base := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; !strings.HasPrefix(p, "/api/") && p != "/app.js" && p != "/robots.txt" && p != "/img.png" && p != "/favicon.ico" {
			mu.Lock()
			starts = append(starts, start{time.Now(), r.URL.RequestURI()})
			mu.Unlock()
		}
		site.ServeHTTP(w, r)
	})) + "/"
	srv := streamstest.Start(t)
	const delay = 150 * time.Millisecond
	renderCrawl(t, srv.Client(), site, base, "jspolite", "true", func(sp *spiders.Spider) {
		sp.Settings.PerHostDelay = delay
		sp.Settings.PerHostConcurrency = 1
		sp.Settings.MaxPages = 12
	})
	mu.Lock()
	defer mu.Unlock()
	if n := site.Requests()["/favicon.ico"]; n != 0 {
		t.Errorf("favicon requested %d times", n)
	}
	if len(starts) < 5 {
		t.Fatalf("only %d documents loaded", len(starts))
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i].at.Before(starts[j].at) })
	// A script's redirect (/go/N to /p/N) is part of its page's turn, as an HTTP
	// redirect is: the turns start at the other documents, and those are compared.
	turns := []start{starts[0]}
	for i := 1; i < len(starts); i++ {
		if strings.HasPrefix(starts[i-1].path, "/go/") &&
			strings.TrimPrefix(starts[i-1].path, "/go/") == strings.TrimPrefix(starts[i].path, "/p/") {
			continue
		}
		turns = append(turns, starts[i])
	}
	for i := 1; i < len(turns); i++ {
		if gap := turns[i].at.Sub(turns[i-1].at); gap < delay-20*time.Millisecond {
			t.Errorf("documents %s and %s loaded %s apart, delay %s", turns[i-1].path, turns[i].path, gap, delay)
		}
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func keysOf(m map[string]int) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestRenderedPagesShareTheCookieJar: a cookie a page fetched over HTTP received is
// sent by the browser for the next page, and one the rendered page's script set is
// sent by the HTTP fetcher after it: one jar, in Redis, for both kinds of fetch.
func TestRenderedPagesShareTheCookieJar(t *testing.T) {
	exe := browsertest.Chromium(t)
	base := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		switch r.URL.Path {
		case "/a":
			http.SetCookie(w, &http.Cookie{Name: "fromhttp", Value: "1", Path: "/"})
			io.WriteString(w, `<html><body><a href="/b">b</a></body></html>`) //nolint:errcheck // test
		case "/b":
			io.WriteString(w, `<html><body><p id="seen"></p><a href="/c">c</a><script>
document.getElementById("seen").textContent = "saw " + document.cookie;
document.cookie = "fromjs=2; path=/";
</script></body></html>`) //nolint:errcheck // test
		case "/c":
			io.WriteString(w, `<html><body><p id="got">`+r.Header.Get("Cookie")+`</p></body></html>`) //nolint:errcheck // test
		default:
			http.NotFound(w, r)
		}
	}))
	sp, _, err := spiders.Parse("cookies.yaml", []byte(`name: jscookies
start_urls: [`+base+`/a]
allowed_domains: [127.0.0.1]
follow:
  - allow: ["^/b$"]
    render: true
  - allow: ["^/c$"]
items:
  - type: page
    when: "#seen, #got"
    fields: {seen: "#seen", got: "#got"}
settings:
  allow_networks: [127.0.0.1/32]
  obey_robots: false
`))
	if err != nil {
		t.Fatal(err)
	}
	srv := streamstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sink := newMemSink()
	if err := runCrawl(ctx, t, srv.Client(), sp, sink, func(c *handlers.RunConfig) {
		c.Browser = &browser.Config{ExecPath: exe, Tabs: 1}
	}); err != nil {
		t.Fatal(err)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	var seen, got string
	for _, it := range sink.last {
		if s, ok := it.Fields["seen"].(string); ok {
			seen = s
		}
		if g, ok := it.Fields["got"].(string); ok {
			got = g
		}
	}
	if !strings.Contains(seen, "fromhttp=1") {
		t.Errorf("the rendered page's script saw cookies %q, want fromhttp=1 (set over HTTP)", seen)
	}
	if !strings.Contains(got, "fromjs=2") || !strings.Contains(got, "fromhttp=1") {
		t.Errorf("the HTTP fetch after it sent cookies %q, want fromjs=2 (set by the page's script) and fromhttp=1", got)
	}
}
