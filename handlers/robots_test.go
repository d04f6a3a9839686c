package handlers_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
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

// TestRobotsRulesAsRFC9309ReadsThem: a robots.txt with a rule before any user-agent and
// a Crawl-delay that is no number (each made the old parser give up and allow all), a
// path in UTF-8, an escaped '~' and an "Allow: /s/$": every page it disallows is left
// alone and every other page is fetched.
func TestRobotsRulesAsRFC9309ReadsThem(t *testing.T) {
	srv := streamstest.Start(t)
	site := counted(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			fmt.Fprint(w, "Disallow: /ok\nUser-agent: *\nCrawl-delay: soon\nDisallow: /private/\nDisallow: /café\n"+
				"Disallow: /%7Eadmin\nDisallow: /s/\nAllow: /s/$\n")
		case "/":
			page(w, "home", "/private/a", "/caf%C3%A9/x", "/~admin/z", "/s/deep/", "/s/", "/ok", "/cafe")
		default:
			page(w, r.URL.Path)
		}
	}))
	base := serve(t, site)
	sp := titleSpider("rfc9309", base)
	sp.StartURLs = []string{base + "/"}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := runCrawl(ctx, t, srv.Client(), sp, newMemSink(), nil); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/private/a", "/café/x", "/~admin/z", "/s/deep/"} {
		if n := site.count(p); n != 0 {
			t.Errorf("%s fetched %d times; robots.txt disallows it", p, n)
		}
	}
	for _, p := range []string{"/", "/s/", "/ok", "/cafe"} {
		if n := site.count(p); n != 1 {
			t.Errorf("%s fetched %d times, want once", p, n)
		}
	}
	st, err := inspect.ReadStatus(ctx, srv.Client(), streams.NewLayout("rfc9309", 1))
	if err != nil {
		t.Fatal(err)
	}
	if st.Stats["robots_disallowed"] != 4 {
		t.Errorf("robots_disallowed = %d, want 4", st.Stats["robots_disallowed"])
	}
}

// TestGzippedRobotsTxtIsDecoded: a robots.txt sent with Content-Encoding: gzip is read
// as the text it is.
func TestGzippedRobotsTxtIsDecoded(t *testing.T) {
	srv := streamstest.Start(t)
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	fmt.Fprint(zw, "User-agent: *\nDisallow: /private/\n")
	zw.Close()
	site := counted(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			w.Header().Set("Content-Encoding", "gzip")
			w.Header().Set("Content-Type", "text/plain")
			_, _ = w.Write(zipped.Bytes())
		case "/":
			page(w, "home", "/private/x", "/public")
		default:
			page(w, r.URL.Path)
		}
	}))
	base := serve(t, site)
	sp := titleSpider("gzrobots", base)
	sp.StartURLs = []string{base + "/"}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := runCrawl(ctx, t, srv.Client(), sp, newMemSink(), nil); err != nil {
		t.Fatal(err)
	}
	if site.count("/private/x") != 0 || site.count("/public") != 1 {
		t.Errorf("/private/x fetched %d times (want 0), /public %d (want 1)", site.count("/private/x"), site.count("/public"))
	}
}

// TestHugeCrawlDelayIsCapped: Crawl-delay: 100000 is cut to max_crawl_delay (here
// 300ms, so that the test is quick), counted once; the pages are spaced by the cap, and
// the crawl ends.
func TestHugeCrawlDelayIsCapped(t *testing.T) {
	srv := streamstest.Start(t)
	var mu sync.Mutex
	var starts []time.Time
	site := counted(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			fmt.Fprint(w, "User-agent: *\nCrawl-delay: 100000\n")
			return
		}
		mu.Lock()
		starts = append(starts, time.Now())
		mu.Unlock()
		page(w, r.URL.Path, "/a", "/b")
	}))
	base := serve(t, site)
	sp := titleSpider("crawldelay", base)
	sp.StartURLs = []string{base + "/"}
	sp.Settings.MaxCrawlDelay = 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := runCrawl(ctx, t, srv.Client(), sp, newMemSink(), nil); err != nil {
		t.Fatal(err)
	}
	if len(starts) != 3 {
		t.Fatalf("%d pages fetched, want 3", len(starts))
	}
	for i := 1; i < len(starts); i++ {
		if gap := starts[i].Sub(starts[i-1]); gap < 250*time.Millisecond {
			t.Errorf("pages %d and %d %v apart, want the capped delay (300ms)", i-1, i, gap)
		}
	}
	st, err := inspect.ReadStatus(ctx, srv.Client(), streams.NewLayout("crawldelay", 1))
	if err != nil {
		t.Fatal(err)
	}
	if st.Stats["robots_crawl_delay_capped"] != 1 {
		t.Errorf("robots_crawl_delay_capped = %d, want 1", st.Stats["robots_crawl_delay_capped"])
	}
}

// TestUnreachableRobotsDropsTheHostThenDeadRetryBringsItBack: a robots.txt that answers
// 503 to every try disallows its host (nothing fetched) until robots_unreachable_tries
// are spent; then the host's ten waiting pages become dead letters with the reason
// robots_unreachable (counted) and the crawl ends. Once robots.txt answers, a dead
// retry brings the ten back and they are fetched.
func TestUnreachableRobotsDropsTheHostThenDeadRetryBringsItBack(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	rdb := srv.Client()
	var up atomic.Bool
	var robotsAsked atomic.Int32
	site := counted(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			robotsAsked.Add(1)
			if !up.Load() {
				http.Error(w, "busy", http.StatusServiceUnavailable)
				return
			}
			fmt.Fprint(w, "User-agent: *\nDisallow: /private/\n")
			return
		}
		page(w, r.URL.Path)
	}))
	base := serve(t, site)
	sp := titleSpider("unreachable", base)
	sp.StartURLs = nil
	for i := range 10 {
		sp.StartURLs = append(sp.StartURLs, fmt.Sprintf("%s/%d", base, i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	fast := func(c *handlers.RunConfig) { c.RobotsRetry = 50 * time.Millisecond }
	if err := runCrawl(ctx, t, rdb, sp, newMemSink(), fast); err != nil {
		t.Fatal(err)
	}
	if n := robotsAsked.Load(); n != 3 {
		t.Errorf("robots.txt asked %d times, want 3 (robots_unreachable_tries)", n)
	}
	for i := range 10 {
		if n := site.count(fmt.Sprintf("/%d", i)); n != 0 {
			t.Errorf("/%d fetched %d times while robots.txt was unreachable", i, n)
		}
	}
	l := streams.NewLayout("unreachable", 1)
	st, err := inspect.ReadStatus(ctx, rdb, l)
	if err != nil {
		t.Fatal(err)
	}
	if st.Stats["robots_unreachable"] != 10 || st.DeadLetters != 10 || !st.Done {
		t.Errorf("robots_unreachable = %d, dead letters %d, done %v; want 10, 10, true", st.Stats["robots_unreachable"], st.DeadLetters, st.Done)
	}
	dead, err := inspect.ListDead(ctx, rdb, l, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dead {
		if !strings.Contains(d.Error, "robots_unreachable: robots.txt of "+base) {
			t.Errorf("dead letter error %q does not say robots_unreachable and the origin", d.Error)
		}
	}
	up.Store(true)
	if n, err := handlers.RetryDead(ctx, rdb, l, nil); err != nil || n != 10 {
		t.Fatalf("dead retry: %d, %v; want 10", n, err)
	}
	if err := runCrawl(ctx, t, rdb, sp, newMemSink(), fast); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if n := site.count(fmt.Sprintf("/%d", i)); n != 1 {
			t.Errorf("/%d fetched %d times after the dead retry, want once", i, n)
		}
	}
}

// TestCrawlWithUnreachableRobotsEndsByItself: one host whose robots.txt never answers
// (the connection hangs), one answering 503, an https:// link to a plain-HTTP port and
// one to a self-signed certificate: the crawl ends by itself, the four hosts' pages dead
// letters counted as robots_unreachable, and the good host crawled.
//
// It runs the default schedule (robots_unreachable_tries fetches of robots.txt, each
// bounded by the robots.txt timeout, with waits doubling from RobotsRetry between them)
// scaled down: RobotsRetry 100ms instead of 15 s and a 1 s download timeout, which bounds
// each robots.txt fetch, instead of 20 s; tries and page retries are the defaults.
// TestDefaultRobotsScheduleGivesUpAHangingHostInUnderTwoMinutes (handlers/fetch) pins the
// default values, so that the pair proves what waiting the defaults out proved: the
// defaults end such a crawl by itself (within 105 s a host).
func TestCrawlWithUnreachableRobotsEndsByItself(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	good := newChainSite(3, 0)
	goodBase := serve(t, good)
	busy := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "busy", http.StatusServiceUnavailable)
	}))
	hang, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	var connsMu sync.Mutex
	go func() {
		for {
			c, err := hang.Accept()
			if err != nil {
				return
			}
			connsMu.Lock()
			conns = append(conns, c) // read nothing, answer nothing
			connsMu.Unlock()
		}
	}()
	t.Cleanup(func() {
		hang.Close()
		connsMu.Lock()
		for _, c := range conns {
			c.Close()
		}
		connsMu.Unlock()
	})
	plain := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { page(w, "plain") }))
	selfSigned := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { page(w, "tls") }))
	t.Cleanup(selfSigned.Close)
	sp := titleSpider("endsbyitself", goodBase)
	sp.StartURLs = []string{goodBase + "/0", busy + "/", "http://" + hang.Addr().String() + "/",
		strings.Replace(plain, "http://", "https://", 1) + "/", selfSigned.URL + "/"}
	sp.Settings.DownloadTimeout = time.Second // bounds each robots.txt fetch of the hanging host
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	err = runCrawl(ctx, t, srv.Client(), sp, newMemSink(), func(c *handlers.RunConfig) {
		c.RetryBase = 0 // default page retries
		c.RobotsRetry = 100 * time.Millisecond
	})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer rcancel()
	st, err := inspect.ReadStatus(rctx, srv.Client(), streams.NewLayout("endsbyitself", 1))
	if err != nil {
		t.Fatal(err)
	}
	if !st.Done || ctx.Err() != nil {
		t.Fatalf("the crawl did not end by itself within a minute (done %v after %v)", st.Done, took)
	}
	t.Logf("ended by itself in %v", took.Round(time.Second))
	if st.Stats["robots_unreachable"] != 4 || st.DeadLetters != 4 {
		t.Errorf("robots_unreachable = %d, dead letters %d; want 4, 4", st.Stats["robots_unreachable"], st.DeadLetters)
	}
	connsMu.Lock()
	hangTries := len(conns)
	connsMu.Unlock()
	if hangTries != spiders.DefaultRobotsUnreachableTries {
		t.Errorf("the hanging host was asked for robots.txt %d times, want robots_unreachable_tries (%d)", hangTries, spiders.DefaultRobotsUnreachableTries)
	}
	for _, p := range []string{"/0", "/1", "/2"} {
		if good.counts()[p] != 1 {
			t.Errorf("good host's %s fetched %d times, want once", p, good.counts()[p])
		}
	}
}
