package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders/demosite"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// What a real network does between the parts of a crawl, each with real processes, a
// real redis-server and a fault proxy (streamstest.FaultProxy) where the fault is on
// the wire: Redis paused, replies cut mid-stream, slow links. Each crawl must end by
// itself with nothing lost.

// TestRedisPausedMidCrawl pauses Redis for every client (CLIENT PAUSE 10000 ALL, sent
// straight to it) mid-crawl: every call of every process waits 10 s. The crawl must
// complete with nothing lost, every process exiting 0, each having said once that it
// lost Redis and once that it is back.
func TestRedisPausedMidCrawl(t *testing.T) {
	t.Parallel()
	c := newPoliteCrawl(t, 300, 20*time.Millisecond)
	c.seed()
	procs := procList(c.startStages(2, 1, 1))
	reachable := int64(len(c.site.Reachable(false)))
	c.waitRequests(reachable/3, crawlTimeout, procs...)
	if err := c.rdb.Do(context.Background(), "CLIENT", "PAUSE", "10000", "ALL").Err(); err != nil {
		t.Fatalf("CLIENT PAUSE: %v", err)
	}
	served := c.site.TotalRequests()
	t.Logf("Redis paused for 10 s with %d of %d pages served", served, reachable)
	time.Sleep(10 * time.Second) // the test's own calls would wait too
	if served >= reachable {
		t.Errorf("Redis paused after the site was served (%d of %d pages)", served, reachable)
	}
	waitAll(t, crawlTimeout, c.rdb, c.name, procs...)
	checkExit0(t, procs...)
	c.checkComplete("CLIENT PAUSE")
	for _, p := range procs {
		lost, back := strings.Count(p.Stderr(), "lost Redis"), strings.Count(p.Stderr(), "Redis back")
		if lost != 1 || back != 1 {
			t.Errorf("%s said %d times that it lost Redis and %d times that it is back, want once each", p.name, lost, back)
		}
	}
}

// TestFetcherRedisRepliesCut cuts the replies from Redis to one of two fetch processes
// mid-crawl: for 3 s every connection of it (through a fault proxy) is reset after 512
// bytes of replies, new ones too, then the link heals. The site slows down meanwhile
// (200 ms a page) so that the crawl is not over before. The crawl must complete with
// nothing lost, every process exiting 0, and no entry may wait the default --min-idle
// (30 s) with a live consumer that never got it.
func TestFetcherRedisRepliesCut(t *testing.T) {
	t.Parallel()
	c := newPoliteCrawl(t, 300, 20*time.Millisecond)
	proxy := streamstest.StartFaultProxy(t, c.srv.Addr)
	c.seed()
	procs := []*proc{c.stageVia(streams.StageFetch, "fetch-1", "redis://"+proxy.Addr+"/0")}
	for _, s := range [][2]string{{streams.StageFetch, "fetch-2"}, {streams.StageParse, "parse-1"}, {streams.StageStore, "store-1"}} {
		procs = append(procs, c.stageVia(s[0], s[1], c.srv.URL()))
	}
	reachable := int64(len(c.site.Reachable(false)))
	c.waitRequests(reachable/3, crawlTimeout, procs...)

	c.slow.set(200 * time.Millisecond)
	if err := proxy.ResetAfter(512); err != nil {
		t.Fatal(err)
	}
	served := c.site.TotalRequests()
	time.Sleep(3 * time.Second)
	if err := proxy.Heal(); err != nil {
		t.Fatal(err)
	}
	c.slow.set(20 * time.Millisecond)
	healed := c.site.TotalRequests()
	t.Logf("fetch-1's Redis replies cut for 3 s from %d to %d of %d pages served", served, healed, reachable)
	if healed >= reachable {
		t.Errorf("the cut ended after the site was served (%d of %d pages)", healed, reachable)
	}
	waitAll(t, crawlTimeout, c.rdb, c.name, procs...)
	checkExit0(t, procs...)
	c.checkComplete("Redis replies cut")
	// No process died or stopped, and the cut was far shorter than the default
	// --min-idle (30 s): an entry taken over was delivered in Redis to a live consumer
	// that never saw it (the reply of its XREADGROUP was cut), and waited min-idle with
	// its host's slot.
	for _, p := range procs {
		if n := strings.Count(p.Stderr(), "reclaimed idle entry"); n > 0 {
			t.Errorf("%s took over %d entries of a live consumer after --min-idle: their delivery was lost to it", p.name, n)
		}
	}
}

// TestCrawlThroughSlowLinks crawls with 100 ms of latency and a bandwidth limit of
// 256 KB/s a connection between the fetchers and the site (a fault proxy in front of
// it), and 2 ms a round trip between one of the two fetch processes and Redis. The
// crawl must come out exactly as a clean one: every page requested as often, every
// item once, the same dead letters, never more than per_host_concurrency requests at
// once.
func TestCrawlThroughSlowLinks(t *testing.T) {
	t.Parallel()
	var siteLink *streamstest.FaultProxy
	c := newSiteCrawl(t, 150, 0, nil, func(addr string) string {
		siteLink = streamstest.StartFaultProxy(t, addr)
		return siteLink.Addr
	})
	if err := siteLink.Latency(100*time.Millisecond, 0); err != nil {
		t.Fatal(err)
	}
	if err := siteLink.Bandwidth(256); err != nil {
		t.Fatal(err)
	}
	redisLink := streamstest.StartFaultProxy(t, c.srv.Addr)
	if err := redisLink.LatencyEachWay(time.Millisecond); err != nil {
		t.Fatal(err)
	}
	c.seed()
	procs := []*proc{c.stageVia(streams.StageFetch, "fetch-1", "redis://"+redisLink.Addr+"/0")}
	for _, s := range [][2]string{{streams.StageFetch, "fetch-2"}, {streams.StageParse, "parse-1"}, {streams.StageStore, "store-1"}} {
		procs = append(procs, c.stageVia(s[0], s[1], c.srv.URL()))
	}
	took := waitAll(t, crawlTimeout, c.rdb, c.name, procs...)
	checkExit0(t, procs...)
	t.Logf("crawl of %d pages through the slow links: %s, %d bytes fetched", len(c.site.Reachable(false)),
		took.Round(time.Millisecond), statInt(t, c.rdb, c.name, "bytes_fetched"))

	checkRequests(t, wantRequests(c.site.Reachable(false), c.site.ReachableKind(false, demosite.ServerError)), c.site.Requests())
	checkItems(t, readItems(t, c.outs[0]), c.site.ExpectedItems(c.base), "product", "url")
	checkFinished(t, c.rdb, c.name)
	if d := diffCounts(prefixed("stage=fetch ", setOf(c.site.ReachableKind(false, demosite.ServerError))),
		deadLetterPaths(t, c.rdb, c.name, c.base), 20); d != "" {
		t.Errorf("dead letters (-want +got):\n%s", d)
	}
	c.checkInFlight()
}
