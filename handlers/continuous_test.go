package handlers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// A continuous crawl is done only when nothing else is left and no revisit is due
// within its idle window: a run with a 5-minute window stops after the first pass
// (the revisits are 10 minutes off), the same crawl with a 20-minute window or none is
// not done, and once it is one pass again it is done with its revisits scheduled. The
// mode lives in Redis, so every reader of "done" sees it.
func TestAContinuousCrawlIsDoneOnlyWhenNoRevisitIsDueWithinItsWindow(t *testing.T) {
	t.Parallel()
	const n = 5
	rdb := streamstest.Start(t).Client()
	site := &versionedSite{version: map[int]int{}, codes: map[int]int{}}
	base := serve(t, site)
	sp := titleSpider("rvcontinuous", base)
	sp.StartURLs = nil
	for i := range n {
		sp.StartURLs = append(sp.StartURLs, fmt.Sprintf("%s/p/%d", base, i))
	}
	sp.Settings.PerHostConcurrency = -1
	sp.Settings.ObeyRobots = new(bool)
	sp.Settings.Revisit.Rules = []spiders.RevisitRule{{Match: `/p/`, Min: time.Minute, Max: time.Hour, Start: 10 * time.Minute}}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err := runCrawl(ctx, t, rdb, sp, newMemSink(), func(c *handlers.RunConfig) {
		c.Continuous = &inspect.Continuous{On: true, IdleWindow: 5 * time.Minute}
	})
	if err != nil {
		t.Fatal(err)
	}
	layout := streams.NewLayout("rvcontinuous", 1)
	p, err := inspect.ReadProgress(ctx, rdb, layout)
	if err != nil {
		t.Fatal(err)
	}
	if c := site.takeCodes(); c[200] != n {
		t.Fatalf("status codes %v, want %d × 200", c, n)
	}
	if p.Revisits != n || p.NextRevisit <= 8*time.Minute || p.NextRevisit > 10*time.Minute || !p.Done() {
		t.Fatalf("after the run: %d revisits, next in %v, done %v; want %d, 8-10 min, done", p.Revisits, p.NextRevisit, p.Done(), n)
	}
	for _, c := range []struct {
		mode inspect.Continuous
		done bool
	}{
		{inspect.Continuous{On: true, IdleWindow: 20 * time.Minute}, false},
		{inspect.Continuous{On: true}, false},
		{inspect.Continuous{On: true, IdleWindow: 5 * time.Minute}, true},
		{inspect.Continuous{}, true},
	} {
		if err := inspect.SetContinuous(ctx, rdb, layout, c.mode); err != nil {
			t.Fatal(err)
		}
		p, err := inspect.ReadProgress(ctx, rdb, layout)
		if err != nil {
			t.Fatal(err)
		}
		st, err := inspect.ReadStatus(ctx, rdb, layout)
		if err != nil {
			t.Fatal(err)
		}
		if p.Continuous != c.mode || p.Done() != c.done || st.Done != c.done || st.Continuous != c.mode {
			t.Fatalf("mode %+v: read %+v, done %v, status done %v; want done %v", c.mode, p.Continuous, p.Done(), st.Done, c.done)
		}
		if want := (inspect.RevisitCounts{Scheduled: n, NextHour: n}); st.Revisits != want {
			t.Fatalf("status revisits %+v, want %+v", st.Revisits, want)
		}
	}
}
