package fleet_test

import (
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/handlers/fleet"
)

// TestFleetRunsAScheduledCrawlOncePerTick: a crawl scheduled every 3 s, served by 3
// workers, runs once per tick: each run fetches the whole site afresh (its keys reset
// between runs), no tick starts two runs (the site sees each page once a run), and the
// history keeps each run's figures. The crawl goes back to scheduled between runs.
func TestFleetRunsAScheduledCrawlOncePerTick(t *testing.T) {
	r := newRig(t)
	s := newShop(t, 10, 0)
	if _, err := r.reg.Submit(r.ctx, fleet.Submission{Name: "daily", Spider: []byte(s.site.SpiderYAML("daily", s.base)),
		Schedule: "@every 3s"}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"w1", "w2", "w3"} {
		r.worker(name)
	}
	const runs = 4
	deadline := time.Now().Add(2 * time.Minute)
	var c fleet.Crawl
	for {
		var err error
		if c, err = r.reg.Get(r.ctx, "daily"); err != nil {
			t.Fatal(err)
		}
		if c.Runs >= runs && c.State == fleet.Scheduled {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 2 minutes: %+v, want %d runs ended", c, runs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := r.reg.Transition(r.ctx, "daily", nil, fleet.Cancelled, ""); err != nil {
		t.Fatal(err)
	}
	r.checkShopItems("daily", s) // the last run's file: every item, once
	history, err := r.reg.Runs(r.ctx, "daily")
	if err != nil {
		t.Fatal(err)
	}
	want := int64(len(s.site.ExpectedItems(s.base)))
	for _, h := range history {
		t.Logf("run %d: %s, %d items scraped, %d stored, %d dead letters", h.Run, h.State, h.Stats["items_scraped"], h.Items, h.Dead)
		// What a run scraped: the items file keeps one item a key across runs (its sink
		// is idempotent by key), so a run's unchanged items are not stored again.
		if got := h.Stats["items_scraped"]; got != want || h.State != fleet.Scheduled {
			t.Errorf("run %d: %d items scraped, state %s; want %d (a run crawls the site afresh), scheduled", h.Run, got, h.State, want)
		}
	}
	if int64(len(history)) < c.Runs-1 {
		t.Errorf("%d runs kept in the history, want the %d before the last", len(history), c.Runs-1)
	}
	s.mu.Lock()
	home := s.paths["/"]
	s.mu.Unlock()
	t.Logf("%d runs, the home page fetched %d times", c.Runs, home)
	// Each run fetches the home page once; a run started twice for one tick, or a run
	// that kept the last one's seen URLs, would not.
	if int64(home) != c.Runs {
		t.Errorf("the home page fetched %d times in %d runs, want once a run", home, c.Runs)
	}
}
