package cli

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/spiders/demosite"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// failoverCrawl is a crawl of demo shops by separate stage processes (2 fetch, 2 parse,
// 1 store, none ever restarted) on a Redis that loses a primary or its data mid-crawl.
type failoverCrawl struct {
	t      *testing.T
	name   string
	url    string
	rdb    redis.UniversalClient
	sites  []*demosite.Site
	bases  []string
	spider string
	out    string
	procs  []*proc
}

// newFailoverCrawl serves shops demo shops of pages pages each (linking to each other)
// and writes their spider with the crawl split into partitions and durability set.
func newFailoverCrawl(t *testing.T, name, url string, rdb redis.UniversalClient, shopsN, pages, partitions int, durability string) *failoverCrawl {
	t.Helper()
	c := &failoverCrawl{t: t, name: name, url: url, rdb: rdb, out: filepath.Join(t.TempDir(), name+".jsonl")}
	c.sites, c.bases = shops(t, shopsN, pages)
	y := partitionedSpider(t, c.sites[0], name, c.bases[0], partitions)
	y = strings.Replace(y, "\nsettings:\n", "\nsettings:\n  durability: "+durability+"\n", 1)
	c.spider = writeFile(t, name+".yaml", y)
	return c
}

// start seeds the crawl and starts its processes.
func (c *failoverCrawl) start() {
	c.t.Helper()
	code, stdout, stderr := runCLI(c.t, 60*time.Second, nil, "seed", "--redis", c.url, "--spider", c.spider)
	if code != 0 || !strings.Contains(stdout, "queued 1 of 1 URLs") {
		c.t.Fatalf("seed: exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}
	for stage, n := range map[string]int{streams.StageFetch: 2, streams.StageParse: 2, streams.StageStore: 1} {
		for i := 1; i <= n; i++ {
			args := []string{stage, "--until-done", "--redis", c.url, "--spider", c.spider, "--consumer", fmt.Sprintf("%s-%d", stage, i),
				"--log-level", "info", "--min-idle", "5s", "--claim-interval", "1s"}
			args = append(args, fastRetries...)
			if stage == streams.StageStore {
				args = append(args, "--out", c.out)
			}
			c.procs = append(c.procs, startProc(c.t, fmt.Sprintf("%s-%d", stage, i), nil, args...))
		}
	}
}

// products is how many products the shops have: the items a complete crawl stores.
func (c *failoverCrawl) products() int {
	n := 0
	for _, s := range c.sites {
		n += len(s.Products())
	}
	return n
}

// waitStored waits until the store stage has stored a share of the products.
func (c *failoverCrawl) waitStored(share float64) int64 {
	c.t.Helper()
	return waitStat(c.t, c.rdb, c.name, "items_stored", int64(share*float64(c.products())), crawlTimeout)
}

// want returns the items a complete crawl stores.
func (c *failoverCrawl) want() []map[string]string {
	var want []map[string]string
	for i, s := range c.sites {
		want = append(want, s.ExpectedItems(c.bases[i])...)
	}
	return want
}

// missing counts the products whose item is not in the items file.
func (c *failoverCrawl) missing() int {
	c.t.Helper()
	have := map[string]bool{}
	for _, l := range readItems(c.t, c.out) {
		have[str(l["url"])] = true
	}
	n := 0
	for _, w := range c.want() {
		if !have[w["url"]] {
			n++
		}
	}
	return n
}

// duplicated counts the lines of the items file beyond the first of each product.
func (c *failoverCrawl) duplicated() int {
	c.t.Helper()
	lines := readItems(c.t, c.out)
	urls := map[string]bool{}
	for _, l := range lines {
		urls[str(l["url"])] = true
	}
	return len(lines) - len(urls)
}

// checkAsyncLoss checks what a crawl with durability async that lost writes at a
// failover ends with: every process exits 1 saying the crawl is done after a failover
// that may have lost writes (never a plain done), and status shows the failover. It
// logs the products missing from the items file and those in it twice.
func (c *failoverCrawl) checkAsyncLoss() {
	c.t.Helper()
	waitAll(c.t, crawlTimeout, c.rdb, c.name, c.procs...)
	for _, p := range c.procs {
		if p.code == 0 || !strings.Contains(p.Stderr(), "failed over during it with durability async") {
			c.t.Errorf("%s: exit %d; want 1 with the failover loss reported", p.name, p.code)
		}
		if strings.Contains(p.Stderr(), "crawl done") {
			c.t.Errorf("%s reported the crawl done", p.name)
		}
	}
	st := readStatus(c.t, c.rdb, c.name)
	if st.Failover == "" {
		c.t.Errorf("status does not show the failover")
	}
	c.t.Logf("status: done=%v failover %q; %d of %d products missing from the items file, %d there twice",
		st.Done, st.Failover, c.missing(), c.products(), c.duplicated())
}

// checkFetchedOnce checks that every reachable page of the shops was requested (once, or
// again when a failover undid its acks).
func (c *failoverCrawl) checkFetched() {
	c.t.Helper()
	unfetched := 0
	for _, s := range c.sites {
		got := s.Requests()
		for _, u := range s.Reachable(false) {
			if got[u] == 0 {
				if unfetched++; unfetched <= 5 {
					c.t.Errorf("%s was never requested", u)
				}
			}
		}
	}
	if unfetched > 0 {
		c.t.Errorf("%d reachable pages were never requested", unfetched)
	}
}

// TestSentinelFailoverLosesNothingReplicated crawls 5,000 pages behind Sentinel (a
// primary, 2 replicas, 3 sentinels) with durability replicated, and mid-crawl freezes
// the replica the sentinels will promote for a second (what the primary acknowledges
// then is on no replica) and kills the primary with SIGKILL. The same processes follow
// the promoted replica without a restart; the crawl completes with every item stored
// once and right, every page requested, nothing pending, and no failover loss reported.
// (Two replicas: durability replicated waits for one, and after the failover the other
// is it; with one, writes wait until a replica is back.)
func TestSentinelFailoverLosesNothingReplicated(t *testing.T) {
	t.Parallel()
	s := streamstest.StartSentinel(t, 2)
	c := newFailoverCrawl(t, "senrep", s.URL(), s.Client(), 1, 5000, 1, streams.DurabilityReplicated)
	c.start()
	stored := c.waitStored(0.25)
	primary := s.Primary()
	var heir *streamstest.Server
	for _, n := range s.Nodes() {
		if n != primary && heir == nil {
			heir = n
		}
	}
	began := time.Now()
	freezeKill(t, heir, primary, time.Second)
	now := s.WaitPrimary(primary)
	t.Logf("%d items stored; primary %s killed, %s promoted after %v", stored, primary.Addr, now.Addr, time.Since(began).Round(time.Millisecond))
	took := waitAll(t, crawlTimeout, c.rdb, c.name, c.procs...)
	t.Logf("crawl finished %v after the kill", took.Round(time.Millisecond))
	checkExit0(t, c.procs...)
	checkItems(t, readItems(t, c.out), c.want(), "product", "url")
	c.checkFetched()
	st := checkFinished(t, c.rdb, c.name)
	if st.Failover != "" || st.Stats["redis_failovers_seen"] == 0 {
		t.Errorf("status: failover %q, redis_failovers_seen %d; want none recorded (durability replicated) and the failover seen",
			st.Failover, st.Stats["redis_failovers_seen"])
	}
	t.Logf("redis_failovers_seen %d, writes_refused %d, write_outages %d", st.Stats["redis_failovers_seen"],
		st.Stats["writes_refused"], st.Stats["write_outages"])
}

// TestSentinelFailoverAsyncReportsTheLoss is the same crawl and fault behind a primary
// with one replica with durability async: the writes acknowledged while the replica was
// frozen are lost with the primary. The crawl goes on on the promoted replica, and every
// process, once nothing is left to do, exits 1 saying the crawl is done after a failover
// that may have lost writes: never a plain done. The items missing are counted.
func TestSentinelFailoverAsyncReportsTheLoss(t *testing.T) {
	t.Parallel()
	s := streamstest.StartSentinel(t, 1)
	c := newFailoverCrawl(t, "senasync", s.URL(), s.Client(), 1, 5000, 1, streams.DurabilityAsync)
	c.start()
	stored := c.waitStored(0.25)
	heir := s.Nodes()[1]
	primary := s.Primary()
	k := streams.NewKeys(c.name)
	acked := freezeKill(t, heir, primary, time.Second, k.Requests, k.Responses, k.Items)
	s.WaitPrimary(primary)
	kept := entriesAdded(t, heir, k.Requests, k.Responses, k.Items)
	t.Logf("%d items stored at the fault; stream entries the primary had acknowledged: %d, on the promoted replica: %d: %d lost",
		stored, acked, kept, acked-kept)
	if kept >= acked {
		t.Errorf("the promoted replica has %d stream entries, the primary had %d: the fault lost nothing, the test shows nothing", kept, acked)
	}
	c.checkAsyncLoss()
}

// TestClusterFailoverLosesNothingReplicated crawls 20 shops (5,000 pages) split in 6
// partitions on a cluster of 3 masters with a replica each, with durability
// replicated; mid-crawl the master holding most of the crawl loses its replica for a
// second and is killed, and comes back (as a replica of the one that took over). The
// processes carry on; the crawl completes with every item stored once and right.
func TestClusterFailoverLosesNothingReplicated(t *testing.T) {
	t.Parallel()
	rig := clusterRig(t, "clurep")
	c := newFailoverCrawl(t, "clurep", rig.url, rig.rdb, 20, 250, 6, streams.DurabilityReplicated)
	c.start()
	stored := c.waitStored(0.25)
	f := rig.fail(t, time.Second)
	t.Logf("%d items stored; %s", stored, f.what)
	rig.restore(t)
	took := waitAll(t, crawlTimeout, c.rdb, c.name, c.procs...)
	t.Logf("crawl finished %v after the failover", took.Round(time.Millisecond))
	checkExit0(t, c.procs...)
	checkItems(t, readItems(t, c.out), c.want(), "product", "url")
	c.checkFetched()
	st := checkFinished(t, c.rdb, c.name)
	if st.Failover != "" {
		t.Errorf("status shows a failover loss with durability replicated: %s", st.Failover)
	}
}

// TestClusterFailoverAsyncReportsTheLoss is the cluster crawl and fault of
// TestClusterFailoverLosesNothingReplicated with durability async: the entries the
// killed master acknowledged while its replica was frozen are gone, the crawl goes on,
// and every process ends with the failover loss reported, never a plain done.
func TestClusterFailoverAsyncReportsTheLoss(t *testing.T) {
	t.Parallel()
	rig := clusterRig(t, "cluasync")
	c := newFailoverCrawl(t, "cluasync", rig.url, rig.rdb, 20, 250, 6, streams.DurabilityAsync)
	c.start()
	stored := c.waitStored(0.25)
	f := rig.fail(t, time.Second)
	t.Logf("%d items stored; %s: %d lost", stored, f.what, f.acked-f.kept)
	if f.kept >= f.acked {
		t.Errorf("the promoted replica has %d stream entries, the master had %d: the fault lost nothing, the test shows nothing", f.kept, f.acked)
	}
	rig.restore(t)
	c.checkAsyncLoss()
}

// TestFlushAllMidCrawlStopsEveryWorker empties Redis (FLUSHALL) in the middle of a crawl:
// every process exits non-zero with the lost-state error within 10 s, says how to
// resume, and none says done; the crawl's groups are not recreated.
func TestFlushAllMidCrawlStopsEveryWorker(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	rdb := srv.Client()
	c := newFailoverCrawl(t, "flushed", srv.URL(), rdb, 1, 5000, 1, streams.DurabilityAsync)
	c.start()
	c.waitStored(0.2)
	flushed := time.Now()
	if err := rdb.FlushAll(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	waitAll(t, 10*time.Second, nil, "", c.procs...)
	t.Logf("every process exited %v after FLUSHALL", time.Since(flushed).Round(time.Millisecond))
	for _, p := range c.procs {
		errOut := p.Stderr()
		if p.code == 0 || !strings.Contains(errOut, "crawl state lost in Redis") || !strings.Contains(errOut, "--fresh") {
			t.Errorf("%s: exit %d; want non-zero with the lost-state error and how to resume; stderr tail:\n%s", p.name, p.code, tail(errOut, 1500))
		}
		if strings.Contains(errOut, "crawl done") {
			t.Errorf("%s reported the crawl done", p.name)
		}
	}
	// What the processes wrote in the moment before they noticed may be there again
	// (reset or --fresh clears it); the crawl itself is not: no meta, no groups.
	k := streams.NewKeys(c.name)
	if n, err := rdb.Exists(t.Context(), k.Meta).Result(); err != nil || n > 0 {
		t.Errorf("the crawl's meta hash exists again after FLUSHALL (%d, %v)", n, err)
	}
	for _, s := range []string{k.Requests, k.Responses, k.Items} {
		if groups, err := rdb.XInfoGroups(t.Context(), s).Result(); err == nil && len(groups) > 0 {
			t.Errorf("%s has consumer groups again after FLUSHALL: %+v", s, groups)
		}
	}
}
