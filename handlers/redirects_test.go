package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// hitCounter is an http.Handler wrapper that counts requests by path.
type hitCounter struct {
	h    http.Handler
	mu   sync.Mutex
	hits map[string]int
}

func counted(h http.Handler) *hitCounter { return &hitCounter{h: h, hits: map[string]int{}} }

func (c *hitCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	c.hits[r.URL.Path]++
	c.mu.Unlock()
	c.h.ServeHTTP(w, r)
}

func (c *hitCounter) count(path string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits[path]
}

func page(w http.ResponseWriter, title string, links ...string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, "<html><body><h1>%s</h1>", title)
	for _, l := range links {
		fmt.Fprintf(w, `<a href="%s">link</a>`, l)
	}
	fmt.Fprint(w, "</body></html>")
}

// TestRedirectHopsAreCheckedLikeLinks: redirects to an offsite host, to a path
// robots.txt disallows, to the cloud metadata address and to file:// are refused,
// none is fetched, each is counted, none is retried; an allowed redirect is followed.
// allow_networks permits only 127.0.0.1, the test servers.
func TestRedirectHopsAreCheckedLikeLinks(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	offsite := counted(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { page(w, "offsite") }))
	offBase := strings.Replace(serve(t, offsite), "127.0.0.1", "localhost", 1)
	site := counted(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			fmt.Fprint(w, "User-agent: *\nDisallow: /private/\n")
		case "/":
			page(w, "home", "/to-offsite", "/to-private", "/to-metadata", "/to-file", "/to-ok")
		case "/to-offsite":
			http.Redirect(w, r, offBase+"/landing", http.StatusFound)
		case "/to-private":
			http.Redirect(w, r, "/private/secret", http.StatusMovedPermanently)
		case "/to-metadata":
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
		case "/to-file":
			http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
		case "/to-ok":
			http.Redirect(w, r, "/ok", http.StatusFound)
		default:
			page(w, r.URL.Path)
		}
	}))
	base := serve(t, site)
	sp := titleSpider("redirects", base)
	sp.StartURLs = []string{base + "/"}
	sp.Settings.AllowNetworks = []string{"127.0.0.1/32"}
	// In scope, so that only the network guard stands between the hop and the address.
	sp.AllowedDomains = append(sp.AllowedDomains, "169.254.169.254")
	sink := newMemSink()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := runCrawl(ctx, t, srv.Client(), sp, sink, nil); err != nil {
		t.Fatal(err)
	}
	if n := offsite.count("/landing"); n != 0 {
		t.Errorf("offsite target fetched %d times", n)
	}
	if n := site.count("/private/secret"); n != 0 {
		t.Errorf("robots-disallowed target fetched %d times", n)
	}
	for _, p := range []string{"/to-offsite", "/to-private", "/to-metadata", "/to-file"} {
		if n := site.count(p); n != 1 {
			t.Errorf("%s asked %d times, want once (a refused redirect is not retried)", p, n)
		}
	}
	if _, ok := sink.item(fmt.Sprintf(`["page","%s/ok"]`, base)); !ok {
		t.Errorf("the allowed redirect's target was not stored: %v", sink.keys())
	}
	st, err := inspect.ReadStatus(ctx, srv.Client(), streams.NewLayout("redirects", 1))
	if err != nil {
		t.Fatal(err)
	}
	for counter, want := range map[string]int64{"redirect_refused_offsite": 1, "redirect_refused_robots": 1,
		"redirect_refused_scheme": 1, "dropped_private_address": 1, "retries_scheduled": 0} {
		if st.Stats[counter] != want {
			t.Errorf("%s = %d, want %d (stats %v)", counter, st.Stats[counter], want, st.Stats)
		}
	}
	if st.DeadLetters != 0 {
		t.Errorf("%d dead letters, want none", st.DeadLetters)
	}
}

// TestMaxRedirectsZeroFollowsNone: the redirect is not followed, and counted.
func TestMaxRedirectsZeroFollowsNone(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	site := counted(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/0" {
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
			return
		}
		page(w, r.URL.Path)
	}))
	base := serve(t, site)
	sp := titleSpider("noredirect", base)
	zero := 0
	sp.Settings.MaxRedirects = &zero
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := runCrawl(ctx, t, srv.Client(), sp, newMemSink(), nil); err != nil {
		t.Fatal(err)
	}
	st, err := inspect.ReadStatus(ctx, srv.Client(), streams.NewLayout("noredirect", 1))
	if err != nil {
		t.Fatal(err)
	}
	if site.count("/elsewhere") != 0 || st.Stats["redirects_not_followed"] != 1 {
		t.Errorf("target fetched %d times (want 0), redirects_not_followed = %d (want 1)",
			site.count("/elsewhere"), st.Stats["redirects_not_followed"])
	}
}

// TestRobotsServerErrorDisallowsTheHostUntilItAnswers: robots.txt answers 503 three
// times: no page of the host is fetched meanwhile; once it answers 200 every page is.
func TestRobotsServerErrorDisallowsTheHostUntilItAnswers(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	var robotsAsked atomic.Int32
	var pageBeforeRobots atomic.Int32
	site := counted(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			if robotsAsked.Add(1) <= 3 {
				http.Error(w, "busy", http.StatusServiceUnavailable)
				return
			}
			fmt.Fprint(w, "User-agent: *\nDisallow: /private/\n")
			return
		}
		if robotsAsked.Load() <= 3 {
			pageBeforeRobots.Add(1)
		}
		page(w, r.URL.Path, "/1", "/2", "/private/x")
	}))
	base := serve(t, site)
	sp := titleSpider("robots503", base)
	on := true
	sp.Settings.ObeyRobots = &on
	sp.Settings.RobotsUnreachableTries = 5 // three 503s do not give the host up
	sink := newMemSink()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err := runCrawl(ctx, t, srv.Client(), sp, sink, func(c *handlers.RunConfig) { c.RobotsRetry = 200 * time.Millisecond })
	if err != nil {
		t.Fatal(err)
	}
	if n := pageBeforeRobots.Load(); n != 0 {
		t.Errorf("%d pages fetched while robots.txt answered 503; want none", n)
	}
	if n := robotsAsked.Load(); n != 4 {
		t.Errorf("robots.txt asked %d times, want 4 (3 × 503, then 200)", n)
	}
	for _, p := range []string{"/0", "/1", "/2"} {
		if site.count(p) != 1 {
			t.Errorf("%s fetched %d times, want once", p, site.count(p))
		}
	}
	if site.count("/private/x") != 0 {
		t.Errorf("disallowed page fetched")
	}
}

// TestSpiderLoadRejectsBadHeaders: header names, values and user agents that would
// break or split a request are errors when the spider loads, not retried fetches.
func TestSpiderLoadRejectsBadHeaders(t *testing.T) {
	t.Parallel()
	for name, s := range map[string]spiders.Settings{
		"crlf user agent":  {UserAgent: "bot\r\nX-Injected: 1"},
		"bad header name":  {Headers: map[string]string{"Bad Header": "x"}},
		"bad header value": {Headers: map[string]string{"X-Ok": "a\nb"}},
		"bad network":      {AllowNetworks: []string{"http://10.0.0.0/8"}},
	} {
		if err := s.Validate(); err == nil {
			t.Errorf("%s: Validate accepted %+v", name, s)
		}
	}
}

// TestAllowNetworksByHostName: a host name in allow_networks is reached at the
// loopback address it resolves to, while the same address asked for by number is not.
func TestAllowNetworksByHostName(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	site := newChainSite(5, 0)
	base := serve(t, site)
	named := strings.Replace(base, "127.0.0.1", "localhost", 1)
	sp := titleSpider("byname", named)
	sp.StartURLs = []string{named + "/0", base + "/1"}
	sp.AllowedDomains = nil
	sp.Settings.AllowNetworks = []string{"localhost"}
	sp.Settings.ObeyRobots = new(bool)
	sink := newMemSink()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := runCrawl(ctx, t, srv.Client(), sp, sink, nil); err != nil {
		t.Fatal(err)
	}
	wantAllPages(t, sink, named, 5)
	st, err := inspect.ReadStatus(ctx, srv.Client(), streams.NewLayout("byname", 1))
	if err != nil {
		t.Fatal(err)
	}
	if st.Stats["dropped_private_address"] != 1 {
		t.Errorf("dropped_private_address = %d, want 1 (%s/1 by number)", st.Stats["dropped_private_address"], base)
	}
}

// TestRedirectOfAFoundLinkObeysTheFollowRules: a link the rules follow redirects to a
// path their deny refuses: the target is not fetched (redirect_refused_rules). The
// start URL's own redirect is not subject to the rules.
func TestRedirectOfAFoundLinkObeysTheFollowRules(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	site := counted(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			http.Redirect(w, r, "/home", http.StatusFound)
		case "/home":
			page(w, "home", "/p/1", "/p/to-private")
		case "/p/to-private":
			http.Redirect(w, r, "/private/x", http.StatusFound)
		default:
			page(w, r.URL.Path)
		}
	}))
	base := serve(t, site)
	sp, _, err := spiders.Parse("rules.yaml", []byte(fmt.Sprintf(`name: rules
start_urls: [%s/]
allowed_domains: [127.0.0.1]
follow:
  - links: "a[href]"
    allow: ["^/p/"]
    deny: ["^/private/"]
settings:
  obey_robots: false
  allow_networks: [127.0.0.1/32]
`, base)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := runCrawl(ctx, t, srv.Client(), sp, newMemSink(), nil); err != nil {
		t.Fatal(err)
	}
	if site.count("/home") != 1 || site.count("/p/1") != 1 || site.count("/private/x") != 0 {
		t.Errorf("home %d, /p/1 %d, /private/x %d; want 1, 1, 0", site.count("/home"), site.count("/p/1"), site.count("/private/x"))
	}
	st, err := inspect.ReadStatus(ctx, srv.Client(), streams.NewLayout("rules", 1))
	if err != nil {
		t.Fatal(err)
	}
	if st.Stats["redirect_refused_rules"] != 1 {
		t.Errorf("redirect_refused_rules = %d, want 1", st.Stats["redirect_refused_rules"])
	}
}
