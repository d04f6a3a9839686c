package handlers_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestSitemapIndexChainsStop: an index that lists an index that lists an index, and so
// on forever (10,632 requests in 90 s: a listed sitemap kept its index's depth): the
// protocol allows one level of index, so the second index's two entries are not
// followed (counted sitemaps_nested_too_deep) and the crawl ends; a listed sitemap is
// one level deeper than its index, so max_depth (1) drops the page it lists.
func TestSitemapIndexChainsStop(t *testing.T) {
	srv := streamstest.Start(t)
	site := counted(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := "http://" + r.Host
		var i int
		switch {
		case strings.HasPrefix(r.URL.Path, "/index/"):
			fmt.Sscanf(r.URL.Path, "/index/%d", &i)
			fmt.Fprintf(w, `<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<sitemap><loc>%s/index/%d</loc></sitemap><sitemap><loc>%s/pages/%d</loc></sitemap></sitemapindex>`, host, i+1, host, i)
		case strings.HasPrefix(r.URL.Path, "/pages/"):
			fmt.Sscanf(r.URL.Path, "/pages/%d", &i)
			fmt.Fprintf(w, `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>%s/p/%d</loc></url></urlset>`, host, i)
		default:
			page(w, r.URL.Path)
		}
	}))
	base := serve(t, site)
	sp := titleSpider("sitemapchain", base)
	sp.StartURLs = nil
	sp.SitemapURLs = []string{base + "/index/0"}
	sp.Settings.ObeyRobots = new(bool)
	sp.Settings.MaxDepth = 1
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := runCrawl(ctx, t, srv.Client(), sp, newMemSink(), nil); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]int{"/index/0": 1, "/index/1": 1, "/pages/0": 1, "/p/0": 0, "/index/2": 0, "/pages/1": 0} {
		if n := site.count(p); n != want {
			t.Errorf("%s fetched %d times, want %d", p, n, want)
		}
	}
	st, err := inspect.ReadStatus(ctx, srv.Client(), streams.NewLayout("sitemapchain", 1))
	if err != nil {
		t.Fatal(err)
	}
	if st.Stats["sitemaps_nested_too_deep"] != 2 || st.Stats["dropped_depth"] != 1 {
		t.Errorf("sitemaps_nested_too_deep = %d (want 2: /index/1's entries), dropped_depth = %d (want 1: /p/0 is 2 deep)",
			st.Stats["sitemaps_nested_too_deep"], st.Stats["dropped_depth"])
	}
}

// TestSitemapBombIsCutAt50MB: a gzipped sitemap that inflates to 60 MB (three URLs,
// then whitespace, then two more) is read as a stream up to the protocol's 50 MB: the
// first three are queued, the rest is cut (counted sitemaps_cut), and the crawl ends.
func TestSitemapBombIsCutAt50MB(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	var bomb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&bomb, gzip.BestSpeed) // 77 KB; BestCompression (61 KB) took 9 times as long under -race
	var once sync.Once
	site := counted(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := "http://" + r.Host
		if r.URL.Path == "/bomb.xml.gz" {
			once.Do(func() {
				fmt.Fprint(zw, `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
				for i := range 3 {
					fmt.Fprintf(zw, `<url><loc>%s/a/%d</loc></url>`, host, i)
				}
				pad := bytes.Repeat([]byte(" "), 1<<20)
				for range 60 {
					_, _ = zw.Write(pad)
				}
				fmt.Fprintf(zw, `<url><loc>%s/b/0</loc></url><url><loc>%s/b/1</loc></url></urlset>`, host, host)
				zw.Close()
			})
			_, _ = w.Write(bomb.Bytes())
			return
		}
		page(w, r.URL.Path)
	}))
	base := serve(t, site)
	sp := titleSpider("sitemapbomb", base)
	sp.StartURLs = nil
	sp.SitemapURLs = []string{base + "/bomb.xml.gz"}
	sp.Settings.ObeyRobots = new(bool)
	// A bound, not a timing: reading 50 MB under the race detector beside other packages'
	// crawls on 2 cores took over a minute.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := runCrawl(ctx, t, srv.Client(), sp, newMemSink(), nil); err != nil || ctx.Err() != nil {
		t.Fatalf("crawl: %v (context: %v)", err, ctx.Err())
	}
	t.Logf("the bomb: %d bytes gzipped", bomb.Len())
	for p, want := range map[string]int{"/a/0": 1, "/a/1": 1, "/a/2": 1, "/b/0": 0, "/b/1": 0} {
		if n := site.count(p); n != want {
			t.Errorf("%s fetched %d times, want %d", p, n, want)
		}
	}
	st, err := inspect.ReadStatus(ctx, srv.Client(), streams.NewLayout("sitemapbomb", 1))
	if err != nil {
		t.Fatal(err)
	}
	if st.Stats["sitemaps_cut"] != 1 || st.DeadLetters != 0 {
		t.Errorf("sitemaps_cut = %d (want 1), dead letters %d (want 0)", st.Stats["sitemaps_cut"], st.DeadLetters)
	}
}

// TestSitemapIsCutAt50000URLs: a sitemap of 50,005 URLs gives the protocol's 50,000
// and is counted as cut (sitemaps_cut), as one cut at 50 MB is; the URLs past the
// bound are not even queued (max_pages refuses all but the first ones).
func TestSitemapIsCutAt50000URLs(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	site := counted(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big.xml" {
			var b bytes.Buffer
			b.WriteString(`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
			for i := range 50005 {
				fmt.Fprintf(&b, `<url><loc>http://%s/u/%d</loc></url>`, r.Host, i)
			}
			b.WriteString(`</urlset>`)
			_, _ = w.Write(b.Bytes())
			return
		}
		page(w, r.URL.Path)
	}))
	base := serve(t, site)
	sp := titleSpider("sitemapurls", base)
	sp.StartURLs = nil
	sp.SitemapURLs = []string{base + "/big.xml"}
	sp.Settings.ObeyRobots = new(bool)
	sp.Settings.MaxPages = 4
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := runCrawl(ctx, t, srv.Client(), sp, newMemSink(), nil); err != nil {
		t.Fatal(err)
	}
	st, err := inspect.ReadStatus(ctx, srv.Client(), streams.NewLayout("sitemapurls", 1))
	if err != nil {
		t.Fatal(err)
	}
	offered := st.Stats["dropped_max_pages"] + st.Stats["requests_queued"]
	if st.Stats["sitemaps_cut"] != 1 || offered > 50001 {
		t.Errorf("sitemaps_cut = %d (want 1); %d requests offered to the frontier (want the sitemap and 50,000 URLs at most)",
			st.Stats["sitemaps_cut"], offered)
	}
}

// TestNoLinksAreLookedForOnceMaxPagesIsSpent: max_pages is spent by the start URLs:
// the pages' links are not even extracted (Links gives none; before, each was encoded
// and sent to Redis to be refused there: dropped_max_pages), and a sitemap is not
// decoded (this one is malformed: decoded, it would be a dead letter).
func TestNoLinksAreLookedForOnceMaxPagesIsSpent(t *testing.T) {
	srv := streamstest.Start(t)
	site := counted(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/sitemap.xml" {
			fmt.Fprint(w, "<urlset><url><loc>this is < not XML")
			return
		}
		page(w, r.URL.Path, "/l/1", "/l/2", "/l/3", "/l/4", "/l/5")
	}))
	base := serve(t, site)
	sp := titleSpider("spent", base)
	sp.StartURLs = []string{base + "/0", base + "/1"}
	sp.SitemapURLs = []string{base + "/sitemap.xml"}
	sp.Settings.ObeyRobots = new(bool)
	sp.Settings.MaxPages = 3
	var mu sync.Mutex
	seen := 0
	parse := sp.Callbacks["parse"]
	sp.Handle("parse", func(ctx context.Context, res *spiders.Response, out *spiders.Output) error {
		mu.Lock()
		seen += len(res.Links("a[href]"))
		mu.Unlock()
		return parse(ctx, res, out)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := runCrawl(ctx, t, srv.Client(), sp, newMemSink(), nil); err != nil {
		t.Fatal(err)
	}
	st, err := inspect.ReadStatus(ctx, srv.Client(), streams.NewLayout("spent", 1))
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if seen != 0 || st.Stats["dropped_max_pages"] != 0 || st.DeadLetters != 0 || st.Stats["pages_fetched"] != 3 {
		t.Errorf("links seen %d, dropped_max_pages %d, dead letters %d, pages fetched %d; want 0, 0, 0, 3",
			seen, st.Stats["dropped_max_pages"], st.DeadLetters, st.Stats["pages_fetched"])
	}
}

// TestLinksPerPageAreCapped: a page with 30 links and max_links_per_page 10: ten are
// followed, twenty counted as left out.
func TestLinksPerPageAreCapped(t *testing.T) {
	srv := streamstest.Start(t)
	var links []string
	for i := range 30 {
		links = append(links, fmt.Sprintf("/l/%d", i))
	}
	site := counted(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" {
			page(w, "home", links...)
			return
		}
		page(w, r.URL.Path)
	}))
	base := serve(t, site)
	sp := titleSpider("linkcap", base)
	sp.StartURLs = []string{base + "/"}
	sp.Settings.ObeyRobots = new(bool)
	sp.Settings.MaxLinksPerPage = 10
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := runCrawl(ctx, t, srv.Client(), sp, newMemSink(), nil); err != nil {
		t.Fatal(err)
	}
	fetched := 0
	for _, l := range links {
		fetched += site.count(l)
	}
	st, err := inspect.ReadStatus(ctx, srv.Client(), streams.NewLayout("linkcap", 1))
	if err != nil {
		t.Fatal(err)
	}
	if fetched != 10 || st.Stats["links_dropped_over_cap"] != 20 {
		t.Errorf("%d linked pages fetched, links_dropped_over_cap %d; want 10, 20", fetched, st.Stats["links_dropped_over_cap"])
	}
}
