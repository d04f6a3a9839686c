package handlers_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/spiders/broadsite"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// broadSpider crawls every host of web, one item per page.
func broadSpider(name string, web *broadsite.Web) *spiders.Spider {
	sp := politeSpider(name, web.Bases()...)
	sp.Settings.Concurrency = 8
	sp.Settings.AllowNetworks = []string{"127.0.0.0/8"} // a host per loopback address
	return sp
}

// startWeb serves a broad web for the test.
func startWeb(t *testing.T, cfg broadsite.Config) *broadsite.Web {
	t.Helper()
	web, err := broadsite.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(web.Close)
	return web
}

// TestBroadCrawlIsPoliteAndFetchesEveryPageOnce: many hosts, one request at a time and
// a delay each, two fetch processes: no host sees two requests (robots.txt included)
// closer than the delay, nor two at once, and every page is fetched exactly once.
func TestBroadCrawlIsPoliteAndFetchesEveryPageOnce(t *testing.T) {
	srv := streamstest.Start(t)
	web := startWeb(t, broadsite.Config{Hosts: 30, Pages: 8, Latency: 10 * time.Millisecond, Robots: "User-agent: *\nDisallow: /private/\n"})
	sp := broadSpider("broad", web)
	const delay = 150 * time.Millisecond
	sp.Settings.PerHostConcurrency, sp.Settings.PerHostDelay = 1, delay
	runCluster(t, srv, sp, 2, newMemSink(), nil)
	// No tolerance: the next start is counted from the end of the previous request (its
	// answer read, after the server saw it), so however late a request reaches the
	// server, the next one reaches it at least the delay after.
	r := web.Report(delay, 0)
	t.Logf("%+v", r)
	if r.Missing != 0 || r.Duplicates != 0 || r.Pages != 30*8 {
		t.Fatalf("pages fetched %d (%d twice, %d never), want every one of %d once", r.Pages, r.Duplicates, r.Missing, 30*8)
	}
	if r.Requests != 30*9 {
		t.Errorf("%d requests, want %d (pages and one robots.txt per host)", r.Requests, 30*9)
	}
	if r.ShortGaps != 0 {
		t.Errorf("%d gaps shorter than %s between two requests to a host; smallest %s", r.ShortGaps, delay, r.MinGap)
	}
	if r.MaxInFlight != 1 {
		t.Errorf("a host had %d requests in flight at once, want 1", r.MaxInFlight)
	}
}

// TestRetryAfterOnOneHostSlowsEveryFetcherForThatHostOnly: a 429 with Retry-After from
// one host stops every fetcher from starting requests there for that long, while the
// other hosts are crawled on.
func TestRetryAfterOnOneHostSlowsEveryFetcherForThatHostOnly(t *testing.T) {
	srv := streamstest.Start(t)
	web := startWeb(t, broadsite.Config{Hosts: 4, Pages: 60, Latency: 30 * time.Millisecond})
	sp := broadSpider("slowdown", web)
	sp.Settings.PerHostConcurrency = 2
	runCluster(t, srv, sp, 2, newMemSink(), func() {
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if len(web.Hits()[0]) >= 5 {
				break
			}
		}
		web.SlowDown(0, 1) // the next page of host 0 answers 429, Retry-After: 1
	})
	hits := web.Hits()
	var slowed time.Time
	for _, h := range hits[0] {
		if h.Slowed {
			slowed = h.At
		}
	}
	if slowed.IsZero() {
		t.Fatal("host 0 never answered 429")
	}
	// Requests to host 0 that started within the Retry-After: at most the one other
	// slot's request, handed out before the 429.
	during := 0
	for _, h := range hits[0] {
		if h.At.After(slowed) && h.At.Before(slowed.Add(time.Second-50*time.Millisecond)) {
			during++
		}
	}
	if during > 1 {
		t.Errorf("host 0 got %d requests within its 1s Retry-After, want at most 1 (its other slot)", during)
	}
	// The other hosts went on meanwhile.
	others := 0
	for _, hs := range hits[1:] {
		for _, h := range hs {
			if h.At.After(slowed) && h.At.Before(slowed.Add(800*time.Millisecond)) {
				others++
			}
		}
	}
	if others < 10 {
		t.Errorf("the other hosts got %d requests during host 0's back-off; they were held back", others)
	}
	r := web.Report(0, 0)
	if r.Missing != 0 || r.Duplicates != 0 {
		t.Fatalf("%d pages never fetched, %d twice; want every page once (the 429 retried)", r.Missing, r.Duplicates)
	}
	t.Logf("host 0 requests during its back-off: %d, other hosts': %d", during, others)
}

// TestPrioritySeedInABroadCrawlGoesBeforeItsHostsBacklog: a priority-10 seed pushed
// mid-crawl for a host with a backlog is that host's next request (after the one in
// flight), whatever its backlog.
func TestPrioritySeedInABroadCrawlGoesBeforeItsHostsBacklog(t *testing.T) {
	srv := streamstest.Start(t)
	web := startWeb(t, broadsite.Config{Hosts: 20, Pages: 20, Latency: 10 * time.Millisecond})
	sp := broadSpider("prio", web)
	sp.Settings.PerHostConcurrency, sp.Settings.PerHostDelay = 1, 60*time.Millisecond
	seedURL := web.Bases()[3] + "/p/7?seed=1"
	var pushed time.Time
	runCluster(t, srv, sp, 2, newMemSink(), func() {
		time.Sleep(500 * time.Millisecond)
		pushed = time.Now()
		seed := fmt.Sprintf(`{"url": %q, "priority": 10}`, seedURL)
		if err := srv.Client().LPush(context.Background(), streams.NewKeys("prio").Seeds, seed).Err(); err != nil {
			t.Error(err)
		}
	})
	var before, after int
	var fetched time.Time
	for _, h := range web.Hits()[3] {
		switch {
		case strings.HasSuffix(h.Path, "?seed=1"):
			fetched = h.At
		case h.At.After(pushed) && fetched.IsZero():
			before++
		case !fetched.IsZero():
			after++
		}
	}
	if fetched.IsZero() {
		t.Fatal("the priority seed was never fetched")
	}
	if before > 2 {
		t.Errorf("host 3 served %d other requests between the push and the priority seed, want at most 2", before)
	}
	if after == 0 {
		t.Error("host 3 served nothing after the seed: the test did not catch a backlog")
	}
	t.Logf("host 3: %d requests before the seed after the push, %d after", before, after)
}
