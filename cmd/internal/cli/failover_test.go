package cli

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/spiders/demosite"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// failoverCrawl is a crawl of demo shops by separate stage processes (2 fetch, 2 parse,
// 1 store, none ever restarted) on a Redis that loses a primary or its data mid-crawl.
// The shops stand behind a gate that holds their answers once a share of the pages was
// served: the test's fault lands there, with the rest of the crawl still to do, at any
// pace of the workers.
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
	gate   *gate
	// storedAtFault is the items stored when the fault landed (atFault).
	storedAtFault int64
}

// newFailoverCrawl serves shops demo shops of pages pages each (linking to each other)
// behind a gate that holds once share of their reachable pages were served, and writes
// their spider with the crawl split into partitions and durability set.
func newFailoverCrawl(t *testing.T, name, url string, rdb redis.UniversalClient, shopsN, pages, partitions int, durability string, share float64) *failoverCrawl {
	t.Helper()
	c := &failoverCrawl{t: t, name: name, url: url, rdb: rdb, out: filepath.Join(t.TempDir(), name+".jsonl"), gate: newGate(0, nil)}
	c.sites, c.bases = shopsBehind(t, shopsN, pages, c.gate)
	c.gate.let(int64(share * float64(c.reachable())))
	y := partitionedSpider(t, c.sites[0], name, c.bases[0], partitions)
	y = withSetting(t, y, "durability: "+durability)
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

// reachable is how many pages of the shops a complete crawl requests.
func (c *failoverCrawl) reachable() int {
	n := 0
	for _, s := range c.sites {
		n += len(s.Reachable(false))
	}
	return n
}

// waitGate waits until the crawl reached the gate: it served its share of the pages and
// holds the next requests.
func (c *failoverCrawl) waitGate() {
	c.t.Helper()
	c.gate.waitHeld(c.t, crawlTimeout)
}

// hooks paces the crawl around freezeKill: ten more pages at a time while the heir is
// frozen, atFault before the kill, and the gate open once the primary is dead (the
// crawl runs on through the failover).
func (c *failoverCrawl) hooks() faultHooks {
	return faultHooks{more: func() { c.gate.let(10) }, paused: c.atFault, killed: c.gate.open}
}

// atFault checks that the fault lands mid-crawl: fewer pages served than reachable (the
// gate holds the rest) and fewer items stored than products. Without this, workers
// faster than the fault would make the test show nothing.
func (c *failoverCrawl) atFault() {
	c.t.Helper()
	passed, held := c.gate.state()
	stored, err := c.rdb.HGet(c.t.Context(), streams.NewKeys(c.name).Stats, "items_stored").Int64()
	if err != nil && !errors.Is(err, redis.Nil) {
		c.t.Fatalf("items stored at the fault: %v", err)
	}
	c.storedAtFault = stored
	c.t.Logf("at the fault: %d of %d pages served (%d held at the gate), %d of %d items stored",
		passed, c.reachable(), held, stored, c.products())
	if passed >= int64(c.reachable()) || stored >= int64(c.products()) {
		c.t.Errorf("the fault landed after the crawl's work: %d of %d pages served, %d of %d items stored",
			passed, c.reachable(), stored, c.products())
	}
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
// primary, 2 replicas, 3 sentinels) with durability replicated; once a quarter of the
// pages were served (the shop holds the next requests: the fault lands mid-crawl at any
// pace of the workers) it freezes a replica for a second, lets pages through until the
// primary has writes that replica has not (checked), and kills the primary with SIGKILL;
// the shop answers again from then on. The same processes follow
// the promoted replica without a restart; the crawl completes with every item stored
// once and right, every page requested, nothing pending, and no failover loss reported.
// (Two replicas: durability replicated waits for one, and after the failover the other
// is it; with one, writes wait until a replica is back.)
func TestSentinelFailoverLosesNothingReplicated(t *testing.T) {
	t.Parallel()
	s := streamstest.StartSentinel(t, 2)
	c := newFailoverCrawl(t, "senrep", s.URL(), s.Client(), 1, 5000, 1, spiders.DurabilityReplicated, 0.25)
	c.start()
	c.waitGate()
	primary := s.Primary()
	var heir *streamstest.Server
	for _, n := range s.Nodes() {
		if n != primary && heir == nil {
			heir = n
		}
	}
	began := time.Now()
	acked, kept := freezeKill(t, heir, primary, time.Second, c.hooks(), streamKeys(t, primary, c.name)...)
	now := s.WaitPrimary(primary)
	t.Logf("%d items stored; primary %s killed, %s promoted after %v; stream entries on the primary: %d, on the frozen replica: %d",
		c.storedAtFault, primary.Addr, now.Addr, time.Since(began).Round(time.Millisecond), acked, kept)
	if kept >= acked {
		t.Errorf("the frozen replica has %d stream entries, the primary had %d: no write was in flight at the fault", kept, acked)
	}
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

// TestSentinelFailoverAsyncReportsTheLoss is the same crawl and fault (the same gate)
// behind a primary
// with one replica with durability async: the writes acknowledged while the replica was
// frozen are lost with the primary. The crawl goes on on the promoted replica, and every
// process, once nothing is left to do, exits 1 saying the crawl is done after a failover
// that may have lost writes: never a plain done. The items missing are counted.
func TestSentinelFailoverAsyncReportsTheLoss(t *testing.T) {
	t.Parallel()
	s := streamstest.StartSentinel(t, 1)
	c := newFailoverCrawl(t, "senasync", s.URL(), s.Client(), 1, 5000, 1, spiders.DurabilityAsync, 0.25)
	c.start()
	c.waitGate()
	heir := s.Nodes()[1]
	primary := s.Primary()
	k := streams.NewKeys(c.name)
	acked, kept := freezeKill(t, heir, primary, time.Second, c.hooks(), k.Requests, k.Responses, k.Items)
	s.WaitPrimary(primary)
	t.Logf("%d items stored at the fault; stream entries the primary had acknowledged: %d, on the promoted replica: %d: %d lost",
		c.storedAtFault, acked, kept, acked-kept)
	if kept >= acked {
		t.Errorf("the promoted replica has %d stream entries, the primary had %d: the fault lost nothing, the test shows nothing", kept, acked)
	}
	c.checkAsyncLoss()
}

// TestClusterFailoverLosesNothingReplicated crawls 20 shops (5,000 pages) split in 6
// partitions on a cluster of 3 masters with a replica each, with durability
// replicated; once a quarter of the pages were served (the shops hold the next requests
// until the kill), the master holding most of the crawl loses its replica for a second,
// during which it takes writes its replica has not (checked), is killed, and comes back
// (as a replica of the one that took over). The processes carry on; the crawl completes
// with every item stored once and right.
func TestClusterFailoverLosesNothingReplicated(t *testing.T) {
	t.Parallel()
	rig := clusterRig(t, "clurep")
	c := newFailoverCrawl(t, "clurep", rig.url, rig.rdb, 20, 250, 6, spiders.DurabilityReplicated, 0.25)
	c.start()
	c.waitGate()
	f := rig.fail(t, time.Second, c.hooks())
	t.Logf("%d items stored; %s", c.storedAtFault, f.what)
	if f.kept >= f.acked {
		t.Errorf("the promoted replica has %d stream entries, the master had %d: no write was in flight at the fault", f.kept, f.acked)
	}
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
	c := newFailoverCrawl(t, "cluasync", rig.url, rig.rdb, 20, 250, 6, spiders.DurabilityAsync, 0.25)
	c.start()
	c.waitGate()
	f := rig.fail(t, time.Second, c.hooks())
	t.Logf("%d items stored; %s: %d lost", c.storedAtFault, f.what, f.acked-f.kept)
	if f.kept >= f.acked {
		t.Errorf("the promoted replica has %d stream entries, the master had %d: the fault lost nothing, the test shows nothing", f.kept, f.acked)
	}
	rig.restore(t)
	c.checkAsyncLoss()
}

// TestFlushAllMidCrawlStopsEveryWorker empties Redis (FLUSHALL) in the middle of a crawl
// (a fifth of the pages served, the shop holding the next requests until then): every
// process exits non-zero with the lost-state error within 10 s, says how to
// resume, and none says done; the crawl's groups are not recreated.
func TestFlushAllMidCrawlStopsEveryWorker(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	rdb := srv.Client()
	c := newFailoverCrawl(t, "flushed", srv.URL(), rdb, 1, 5000, 1, spiders.DurabilityAsync, 0.2)
	c.start()
	c.waitGate()
	c.atFault()
	flushed := time.Now()
	if err := rdb.FlushAll(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	c.gate.open()
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
