package handlers_test

import (
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

var revisitMetaRE = regexp.MustCompile(`"_revisit":"(\d+):`)

// revisitIntervals returns how many scheduled revisits of partition k carry each
// interval (ms, from their "_revisit" meta).
func revisitIntervals(ctx context.Context, t *testing.T, rdb redis.UniversalClient, k streams.Keys) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, m := range rdb.ZRange(ctx, k.Revisits, 0, -1).Val() {
		for _, e := range rdb.LRange(ctx, k.Revisits+":"+m, 0, -1).Val() {
			sub := revisitMetaRE.FindStringSubmatch(e)
			if sub == nil {
				t.Fatalf("scheduled revisit without its state: %q", e)
			}
			out[sub[1]]++
		}
	}
	return out
}

// A crawl schedules a revisit of every fetched page its revisit rule matches, at the
// rule's start interval; when the revisits come due and are fetched (conditionally: an
// unchanged page answers 304), changed pages come back at half the interval and
// unchanged ones at twice it, counted.
func TestFetchedPagesAreScheduledForAdaptiveRevisits(t *testing.T) {
	t.Parallel()
	const n = 20
	rdb := streamstest.Start(t).Client()
	site := &versionedSite{version: map[int]int{}, codes: map[int]int{}}
	base := serve(t, site)
	sp := titleSpider("rvcrawl", base)
	sp.StartURLs = nil
	for i := range n {
		sp.StartURLs = append(sp.StartURLs, fmt.Sprintf("%s/p/%d", base, i))
	}
	sp.Settings.PerHostConcurrency = -1
	sp.Settings.ObeyRobots = new(bool)
	sp.Settings.Revisit.Rules = []spiders.RevisitRule{{Match: `/p/`, Min: time.Minute, Max: time.Hour, Start: 10 * time.Minute}}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := runCrawl(ctx, t, rdb, sp, newMemSink(), nil); err != nil {
		t.Fatal(err)
	}
	layout := streams.NewLayout("rvcrawl", 1)
	k := layout.Parts[0]
	if got := revisitIntervals(ctx, t, rdb, k); got["600000"] != n || len(got) != 1 {
		t.Fatalf("after the first crawl: intervals %v, want %d × 600000 (the start)", got, n)
	}

	// Ten minutes on, the revisits are due; five pages changed meanwhile.
	site.mu.Lock()
	for i := range 5 {
		site.version[i] = 2
	}
	site.mu.Unlock()
	f, err := frontier.New(frontier.Config{Client: rdb, Layout: layout, SeenCache: -1, RevisitClockShift: 11 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close(context.Background())
	if err := f.ReleaseRevisits(ctx); err != nil {
		t.Fatal(err)
	}
	if w, _ := rdb.HGet(ctx, k.Counts, "waiting").Int(); w != n {
		t.Fatalf("%d requests waiting after the release, want the %d revisits", w, n)
	}
	if err := runCrawl(ctx, t, rdb, sp, newMemSink(), nil); err != nil {
		t.Fatal(err)
	}
	if c := site.takeCodes(); c[200] != n+5 || c[304] != n-5 || len(c) != 2 {
		t.Fatalf("status codes %v, want %d × 200 (the first crawl, the changed pages) and %d × 304 (the unchanged pages, asked with their validators)", c, n+5, n-5)
	}
	if got := revisitIntervals(ctx, t, rdb, k); got["300000"] != 5 || got["1200000"] != n-5 || len(got) != 2 {
		t.Fatalf("after the revisits: intervals %v, want 5 × 300000 (changed: halved), %d × 1200000 (doubled)", got, n-5)
	}
	stats := rdb.HGetAll(ctx, layout.Global.Stats).Val()
	if stats["revisits_changed"] != "5" || stats["revisits_unchanged"] != fmt.Sprint(n-5) || stats["revisits_scheduled"] != fmt.Sprint(2*n) {
		t.Fatalf("stats %v, want 5 changed, %d unchanged, %d scheduled", stats, n-5, 2*n)
	}
	if rv, _ := rdb.HGet(ctx, k.Counts, "revisits").Int(); rv != n {
		t.Fatalf("revisits counter %d, want %d", rv, n)
	}
}

// A URL with a revisit rule that is let through dedup again (revisit.after) and seeded
// again while its revisit is scheduled is fetched, but starts no second chain of
// revisits beside the first: one scheduled revisit per URL, the others counted.
func TestAURLSeededAgainKeepsOneRevisitChain(t *testing.T) {
	t.Parallel()
	const n = 10
	rdb := streamstest.Start(t).Client()
	site := &versionedSite{version: map[int]int{}, codes: map[int]int{}}
	base := serve(t, site)
	sp := titleSpider("rvonechain", base)
	sp.StartURLs = nil
	for i := range n {
		sp.StartURLs = append(sp.StartURLs, fmt.Sprintf("%s/p/%d", base, i))
	}
	sp.Settings.PerHostConcurrency = -1
	sp.Settings.ObeyRobots = new(bool)
	sp.Settings.Revisit.After = time.Millisecond
	sp.Settings.Revisit.Rules = []spiders.RevisitRule{{Match: `/p/`, Min: time.Minute, Max: time.Hour, Start: 10 * time.Minute}}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for range 2 {
		if err := runCrawl(ctx, t, rdb, sp, newMemSink(), nil); err != nil {
			t.Fatal(err)
		}
	}
	layout := streams.NewLayout("rvonechain", 1)
	k := layout.Parts[0]
	if c := site.takeCodes(); c[200] != n || c[304] != n {
		t.Fatalf("status codes %v, want %d × 200 and %d × 304 (both crawls fetch every URL)", c, n, n)
	}
	if rv, _ := rdb.HGet(ctx, k.Counts, "revisits").Int(); rv != n {
		t.Fatalf("%d revisits scheduled, want one per URL (%d)", rv, n)
	}
	if got := revisitIntervals(ctx, t, rdb, k); got["600000"] != n {
		t.Fatalf("scheduled intervals %v, want %d × 600000", got, n)
	}
	stats := rdb.HGetAll(ctx, layout.Global.Stats).Val()
	if stats["revisits_scheduled"] != fmt.Sprint(n) || stats["revisits_other_chain"] != fmt.Sprint(n) {
		t.Fatalf("stats %v, want %d scheduled and %d of another chain", stats, n, n)
	}
}
