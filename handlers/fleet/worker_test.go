package fleet_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/handlers/fleet"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
)

// TestFleetServesEveryCrawl: two workers (all stages; fetch and parse: one store stage
// per items file) serve three crawls submitted before them and one submitted while they run; every crawl ends done with its items
// exact, and the workers stop cleanly.
func TestFleetServesEveryCrawl(t *testing.T) {
	r := newRig(t)
	shops := map[string]*shop{}
	for _, name := range []string{"alpha", "beta", "gamma", "late"} {
		shops[name] = newShop(t, 200, 0)
	}
	for _, name := range []string{"alpha", "beta", "gamma"} {
		r.submit(name, shops[name].site.SpiderYAML(name, shops[name].base))
	}
	stop1, stop2 := r.worker("w1"), r.worker("w2", streams.StageFetch, streams.StageParse)
	r.waitState("alpha", fleet.Running, 30*time.Second)
	r.submit("late", shops["late"].site.SpiderYAML("late", shops["late"].base))
	for name := range shops {
		c := r.waitState(name, fleet.Done, 3*time.Minute)
		if c.Runs != 1 || c.LastError != "" {
			t.Errorf("crawl %s: %d runs, last error %q; want 1 run, no error", name, c.Runs, c.LastError)
		}
	}
	stop1()
	stop2()
	for name, s := range shops {
		r.checkShopItems(name, s)
	}
}

// TestFleetPauseAndResume: once a crawl is paused, no request of it reaches its site
// later than 2 s after, on any worker; resumed, it finishes with its items exact.
func TestFleetPauseAndResume(t *testing.T) {
	r := newRig(t)
	s := newShop(t, 800, 150*time.Millisecond)
	r.submit("shop", s.site.SpiderYAML("shop", s.base))
	r.worker("w1")
	r.worker("w2", streams.StageFetch, streams.StageParse)
	s.waitHits(t, 60, time.Minute)
	if _, err := r.reg.Transition(r.ctx, "shop", []fleet.State{fleet.Running}, fleet.Paused, ""); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	time.Sleep(5 * time.Second)
	if n, last := s.hitsAfter(paused.Add(2 * time.Second)); n > 0 {
		t.Errorf("%d requests reached the site more than 2s after the pause, the last %s after it", n, last.Sub(paused))
	}
	before, _ := s.hitsAfter(time.Time{})
	if c, _ := r.reg.Get(r.ctx, "shop"); c.State != fleet.Paused {
		t.Fatalf("crawl after the pause: %s, want paused", c.State)
	}
	if _, err := r.reg.Transition(r.ctx, "shop", []fleet.State{fleet.Paused}, fleet.Running, ""); err != nil {
		t.Fatal(err)
	}
	r.waitState("shop", fleet.Done, 3*time.Minute)
	if after, _ := s.hitsAfter(time.Time{}); after <= before {
		t.Errorf("the site answered %d requests before the resume, %d after: the crawl did not go on", before, after)
	}
	r.checkShopItems("shop", s)
}

// TestFleetNewVersion: a new version of a running crawl's spider is served once the
// workers have moved to it: the crawl ends done, every product has its item, and the
// items stored after the switch are the new spider's.
func TestFleetNewVersion(t *testing.T) {
	r := newRig(t)
	s := newShop(t, 800, 150*time.Millisecond)
	v1 := s.site.SpiderYAML("shop", s.base)
	v2 := strings.Replace(v1, `      sku: ".sku::text"`+"\n", `      sku: ".sku::text"`+"\n"+`      number: {css: ".sku", re: 'SKU-0*(\d+)'}`+"\n", 1)
	if v2 == v1 {
		t.Fatal("the shop's spider has no sku field to add a field after")
	}
	r.submit("shop", v1)
	r.worker("w1")
	r.worker("w2", streams.StageFetch, streams.StageParse)
	s.waitHits(t, 80, time.Minute)
	r.submit("shop", v2)
	c := r.waitState("shop", fleet.Done, 3*time.Minute)
	if c.Version != 2 {
		t.Errorf("crawl done at version %d, want 2", c.Version)
	}
	items := r.items("shop")
	urls := map[string]bool{}
	newer := 0
	for _, it := range items {
		u, _ := it["url"].(string)
		urls[u] = true
		if n, ok := it["number"].(string); ok {
			newer++
			if sku, _ := it["sku"].(string); strings.TrimLeft(strings.TrimPrefix(sku, "SKU-"), "0") != n {
				t.Errorf("item %s: number %q, sku %q: not the new spider's field", u, n, sku)
			}
		}
	}
	want := s.site.ExpectedItems(s.base)
	for _, w := range want {
		if !urls[w["url"]] {
			t.Errorf("no item for %s", w["url"])
		}
	}
	if len(urls) != len(want) || newer == 0 || newer == len(items) {
		t.Errorf("%d items of %d products (%d distinct), %d of them the new spider's; want every product, some items of each version",
			len(items), len(want), len(urls), newer)
	}
}

// TestFleetGoSpiders: a crawl of a Go spider registered by name is served as its crawl
// (its keys and items under the crawl's name); one naming a spider the worker does not
// have fails at once with an error saying so, and is not tried again.
func TestFleetGoSpiders(t *testing.T) {
	r := newRig(t)
	s := newShop(t, 100, 0)
	handlers.Register("fleet-test-shop", func() *spiders.Spider {
		sp, _, err := spiders.Parse("shop.yaml", []byte(s.site.SpiderYAML("fleet-test-shop", s.base)))
		if err != nil {
			panic(err)
		}
		return sp
	})
	for name, goSpider := range map[string]string{"goshop": "fleet-test-shop", "nope": "fleet-test-missing"} {
		if _, err := r.reg.Submit(r.ctx, fleet.Submission{Name: name, GoSpider: goSpider}); err != nil {
			t.Fatal(err)
		}
	}
	r.worker("w1")
	c := r.waitState("nope", fleet.Failed, time.Minute)
	if !strings.Contains(c.LastError, `no Go spider named "fleet-test-missing"`) || c.Runs != 0 {
		t.Errorf("crawl of a missing Go spider: %d runs, last error %q; want 0 runs and an error naming it", c.Runs, c.LastError)
	}
	r.waitState("goshop", fleet.Done, 2*time.Minute)
	r.checkShopItems("goshop", s)
	// Not tried again: the registry's generation stays put with nothing else changing.
	gen, _ := r.reg.Gen(r.ctx)
	time.Sleep(time.Second)
	if again, _ := r.reg.Gen(r.ctx); again != gen {
		t.Errorf("the registry changed from generation %d to %d with every crawl ended", gen, again)
	}
}

// TestFleetKeepsNothingOfEndedCrawls: a worker that has served crawl after crawl holds
// no more goroutines than after its first: nothing of an ended crawl is kept running.
// (Its heap is logged, not asserted: the GC's figures vary with the machine's load.)
func TestFleetKeepsNothingOfEndedCrawls(t *testing.T) {
	r := newRig(t)
	r.quiet = true
	r.worker("w1")
	s := newShop(t, 20, 0)
	var base int
	const crawls = 20
	for i := range crawls {
		name := fmt.Sprintf("c%02d", i)
		r.submit(name, s.site.SpiderYAML(name, s.base))
		r.waitState(name, fleet.Done, time.Minute)
		n, heap := settledGoroutines(), heapInUse()
		if i == 1 { // the first crawl warms up what a process keeps (pools, caches)
			base = n
			t.Logf("after crawl 2: %d goroutines, heap in use %d KB", n, heap>>10)
		}
		if i%10 == 9 {
			t.Logf("after crawl %d: %d goroutines, heap in use %d KB", i+1, n, heap>>10)
		}
		if i > 1 && n > base+4 {
			t.Errorf("after crawl %d: %d goroutines, %d after the second: ended crawls keep some", i+1, n, base)
		}
	}
}

// settledGoroutines returns the number of goroutines once it has stopped falling (a
// run's last goroutines end just after its crawl is marked done).
func settledGoroutines() int {
	n := runtime.NumGoroutine()
	for range 50 {
		time.Sleep(100 * time.Millisecond)
		m := runtime.NumGoroutine()
		if m >= n {
			return m
		}
		n = m
	}
	return n
}

// heapInUse returns the heap in use after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// TestFleetRefusesSinksOutsideItsDirectory: a submitted spider is data: its sink may not
// name a file outside the worker's directory (an absolute path, one with ..). Such a
// crawl fails with the reason, and nothing is written there.
func TestFleetRefusesSinksOutsideItsDirectory(t *testing.T) {
	r := newRig(t)
	s := newShop(t, 20, 0)
	abs := filepath.Join(r.dir, "abs.jsonl")
	up := "../" + filepath.Base(r.dir) + "-up.jsonl"
	r.submit("abs", s.site.SpiderYAML("abs", s.base)+"sink: "+abs+"\n")
	r.submit("up", s.site.SpiderYAML("up", s.base)+"sink: "+up+"\n")
	r.worker("w1")
	for _, name := range []string{"abs", "up"} {
		c := r.waitState(name, fleet.Failed, time.Minute)
		if !strings.Contains(c.LastError, "writes files only under its directory") || c.Runs != 0 {
			t.Errorf("crawl %s: %d runs, last error %q; want no run and the sink refused", name, c.Runs, c.LastError)
		}
	}
	for _, p := range []string{abs, up} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was written", p)
		}
	}
}

// TestFleetContinuousCrawlIsServedOn: a continuous crawl is never marked done: its run
// serves on after its pages are all fetched, until it is paused.
func TestFleetContinuousCrawlIsServedOn(t *testing.T) {
	r := newRig(t)
	s := newShop(t, 50, 0)
	if _, err := r.reg.Submit(r.ctx, fleet.Submission{Name: "shop", Spider: []byte(s.site.SpiderYAML("shop", s.base)),
		Continuous: time.Hour}); err != nil {
		t.Fatal(err)
	}
	r.worker("w1")
	want := len(s.site.ExpectedItems(s.base))
	deadline := time.Now().Add(time.Minute)
	for len(r.itemsIfAny("shop")) < want && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(3 * time.Second) // what a one-pass crawl needs to be marked done
	if c, _ := r.reg.Get(r.ctx, "shop"); c.State != fleet.Running {
		t.Errorf("continuous crawl with every page fetched: %s, want running", c.State)
	}
	r.checkShopItems("shop", s)
	if _, err := r.reg.Transition(r.ctx, "shop", []fleet.State{fleet.Running}, fleet.Paused, ""); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	s.mu.Lock()
	s.hits = nil
	s.mu.Unlock()
	time.Sleep(3 * time.Second)
	if n, _ := s.hitsAfter(paused.Add(2 * time.Second)); n > 0 {
		t.Errorf("%d requests more than 2s after the pause", n)
	}
}

// TestFleetRestartsARunWhoseShareMoved: a crawl served alone has the worker's whole
// concurrency; once two more crawls are submitted its share is a third, and its run is
// restarted with it (a 2x move). Every crawl still ends done with its items exact, and
// the restart is not a new run of the crawl.
func TestFleetRestartsARunWhoseShareMoved(t *testing.T) {
	r := newRig(t)
	shops := map[string]*shop{"big": newShop(t, 600, 100*time.Millisecond), "b": newShop(t, 50, 0), "c": newShop(t, 50, 0)}
	r.submit("big", shops["big"].site.SpiderYAML("big", shops["big"].base))
	r.worker("w1")
	shops["big"].waitHits(t, 30, time.Minute)
	r.submit("b", shops["b"].site.SpiderYAML("b", shops["b"].base))
	r.submit("c", shops["c"].site.SpiderYAML("c", shops["c"].base))
	for name, s := range shops {
		if c := r.waitState(name, fleet.Done, 3*time.Minute); c.Runs != 1 {
			t.Errorf("crawl %s: %d runs, want 1", name, c.Runs)
		}
		r.checkShopItems(name, s)
	}
	moved := r.logs.FilterMessage("fleet: stopping the crawl's run").FilterField(zap.String("crawl", "big")).All()
	if len(moved) == 0 || !strings.Contains(fmt.Sprint(moved[0].ContextMap()["why"]), "share moves from 16 to 5") {
		t.Errorf("big's run was not restarted for its share: %v", moved)
	}
}
