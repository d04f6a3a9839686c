package handlers_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/handlers/fleet"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/spiders/broadsite"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// gateTolerance is what the gap tests allow for the server's clock: a request's
// arrival is timed by the server's handler, not where the fetcher's delay counts from.
const gateTolerance = 50 * time.Millisecond

// sharedCrawl runs crawls of one web at once in one Redis (each crawl its own
// handlers.Crawl), the hosts' gate on when gate is set; before starts crawl i (from
// 1), the previous one has had a request reach the web.
func sharedCrawl(t *testing.T, web *broadsite.Web, gate bool, sps ...*spiders.Spider) {
	t.Helper()
	srv := streamstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var shared func(string) bool
	if gate {
		shared = fleet.SharedHosts(sps)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(sps))
	for i, sp := range sps {
		for i > 0 && requests(web) == 0 && ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := handlers.Crawl(ctx, sp, quick(handlers.Options{Redis: srv.URL(), Sink: newMemSink(), Logger: zaptest.NewLogger(t),
				SharedHosts: shared}))
			if err == nil && !st.Done {
				t.Errorf("crawl %s not done", sp.Name)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func requests(web *broadsite.Web) (n int) {
	for _, hits := range web.Hits() {
		n += len(hits)
	}
	return n
}

// gateSpider crawls every page of web's one host under rule.
func gateSpider(name string, web *broadsite.Web, delay time.Duration, conc int) *spiders.Spider {
	sp := broadSpider(name, web)
	sp.Settings.PerHostDelay, sp.Settings.PerHostConcurrency = delay, conc
	return sp
}

// TestCrawlsSharingAHostKeepOnePace: two crawls of one host, each with a delay of
// 500ms, the gate on: the host sees no two requests closer than the delay (robots.txt
// included), nor two at once, while each crawl fetches every page.
func TestCrawlsSharingAHostKeepOnePace(t *testing.T) {
	const pages, delay = 5, 500 * time.Millisecond
	web := startWeb(t, broadsite.Config{Hosts: 1, Pages: pages, Latency: 20 * time.Millisecond})
	sharedCrawl(t, web, true, gateSpider("gate-a", web, delay, 8), gateSpider("gate-b", web, delay, 8))
	r := web.Report(delay, gateTolerance)
	t.Logf("%+v", r)
	if r.Requests != 2*(pages+1) || r.Duplicates != pages {
		t.Fatalf("%d requests (%d pages twice), want every page and robots.txt once per crawl: %d (%d)", r.Requests, r.Duplicates, 2*(pages+1), pages)
	}
	if r.ShortGaps != 0 {
		t.Errorf("%d gaps under %s between two requests of the crawls; smallest %s", r.ShortGaps, delay-gateTolerance, r.MinGap)
	}
	if r.MaxInFlight != 1 {
		t.Errorf("the host had %d requests in flight at once, want 1", r.MaxInFlight)
	}
}

// TestCrawlsSharingAHostOneAtATime: concurrency 1 and no delay, slow pages: the gate
// holds the crawls to one request in flight between them.
func TestCrawlsSharingAHostOneAtATime(t *testing.T) {
	const pages = 8
	web := startWeb(t, broadsite.Config{Hosts: 1, Pages: pages, Latency: 150 * time.Millisecond})
	sharedCrawl(t, web, true, gateSpider("one-a", web, 0, 1), gateSpider("one-b", web, 0, 1))
	r := web.Report(0, 0)
	t.Logf("%+v", r)
	if r.Requests != 2*(pages+1) {
		t.Fatalf("%d requests, want %d", r.Requests, 2*(pages+1))
	}
	if r.MaxInFlight != 1 {
		t.Errorf("the host had %d requests in flight at once, want 1", r.MaxInFlight)
	}
}

// TestCrawlsSharingAHostTakeTheStricterDelay: crawl A asks for 200ms, crawl B (which
// starts first, so its rule is known before A's first request) for 600ms: every gap is
// B's.
func TestCrawlsSharingAHostTakeTheStricterDelay(t *testing.T) {
	const pages, strict = 5, 600 * time.Millisecond
	web := startWeb(t, broadsite.Config{Hosts: 1, Pages: pages, Latency: 20 * time.Millisecond})
	sharedCrawl(t, web, true, gateSpider("strict-b", web, strict, 8), gateSpider("lax-a", web, 200*time.Millisecond, 8))
	r := web.Report(strict, gateTolerance)
	t.Logf("%+v", r)
	if r.Requests != 2*(pages+1) {
		t.Fatalf("%d requests, want %d", r.Requests, 2*(pages+1))
	}
	if r.ShortGaps != 0 {
		t.Errorf("%d gaps under %s, the stricter crawl's delay; smallest %s", r.ShortGaps, strict-gateTolerance, r.MinGap)
	}
}

// TestCrawlsSharingAHostWithoutTheGateComeCloser: the same two crawls as
// TestCrawlsSharingAHostKeepOnePace with the gate off keep each its own pace, and the
// host sees them closer than the delay: the gate is what holds it.
func TestCrawlsSharingAHostWithoutTheGateComeCloser(t *testing.T) {
	const pages, delay = 5, 500 * time.Millisecond
	web := startWeb(t, broadsite.Config{Hosts: 1, Pages: pages, Latency: 20 * time.Millisecond})
	sharedCrawl(t, web, false, gateSpider("free-a", web, delay, 8), gateSpider("free-b", web, delay, 8))
	r := web.Report(delay, gateTolerance)
	t.Logf("%+v", r)
	if r.ShortGaps == 0 {
		t.Errorf("no gap under %s without the gate (smallest %s): the gate tests show nothing", delay-gateTolerance, r.MinGap)
	}
}
