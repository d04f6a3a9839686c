package cli

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/spiders/demosite"
	"github.com/streamcrawl/streamcrawl/streams"
)

// TestRevisitsComeDueAndRealProcessesFetchThemAgain: a continuous crawl's first pass
// schedules every page that answered 200 for a revisit in 30 minutes, and its processes
// end (nothing due within their 10-minute window). The test then makes every bucket of
// the schedule due (their score 0: the schedule's clock, not the processes', moves) and
// starts new processes: they release the revisits, fetch every one of those pages once
// more, find each unchanged (no new item stored) and schedule it again once, further
// out (the interval grows on an unchanged page), then end.
func TestRevisitsComeDueAndRealProcessesFetchThemAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	site := demosite.New(120)
	c := newCluster(t, "rvdue", site)
	c.addSetting("revisit:\n    rules:\n      - {min: 1m, max: 6h, start: 30m}")
	c.seed()
	mode := []string{"--continuous", "--idle-window", "10m"}
	run := func() {
		t.Helper()
		var procs []*proc
		for _, stage := range []string{streams.StageFetch, streams.StageParse, streams.StageStore} {
			procs = append(procs, c.stage(stage, stage+"-1", nil, mode...))
		}
		waitAll(t, crawlTimeout, c.rdb, c.name, procs...)
		checkExit0(t, procs...)
	}
	run()
	first := scheduledRevisitURLs(t, c)
	if len(first) == 0 {
		t.Fatal("the first pass scheduled no revisit")
	}
	k := streams.NewLayout(c.name, 1).Parts[0]
	stats := func(field string) int {
		n, _ := strconv.Atoi(c.rdb.HGet(ctx, streams.NewKeys(c.name).Stats, field).Val())
		return n
	}
	items := func() int {
		b, err := os.ReadFile(c.out)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(string(b), "\n")
	}
	itemsFirst, scheduledFirst := items(), stats("revisits_scheduled")
	nowMin := time.Now().Unix() / 60
	buckets := c.rdb.ZRangeWithScores(ctx, k.Revisits, 0, -1).Val()
	for _, b := range buckets {
		if int64(b.Score) < nowMin+25 {
			t.Fatalf("bucket %v due at minute %d, want 30 minutes out (now %d)", b.Member, int64(b.Score), nowMin)
		}
		if err := c.rdb.ZAdd(ctx, k.Revisits, redis.Z{Score: 0, Member: b.Member}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	site.Reset()
	run()

	// Every scheduled page was fetched once more, and nothing else (the schedule holds
	// canonical URLs: query parameters sorted).
	got := map[string]int{}
	for u, n := range site.Requests() {
		cu, err := spiders.CanonicalURL(strings.TrimSuffix(c.base, "/") + u)
		if err != nil {
			t.Fatal(err)
		}
		got[strings.TrimPrefix(cu, strings.TrimSuffix(c.base, "/"))] += n
	}
	for u := range first {
		if got[u] != 1 {
			t.Errorf("%s requested %d times after its revisit came due, want once", u, got[u])
		}
	}
	if len(got) != len(first) {
		t.Errorf("%d URLs requested after the revisits came due, want the %d scheduled", len(got), len(first))
	}
	// Scheduled again, each once, further out; unchanged, so no new item.
	again := scheduledRevisitURLs(t, c)
	for u := range first {
		if again[u] != 1 {
			t.Errorf("%s scheduled %d times after its revisit, want once", u, again[u])
		}
	}
	if len(again) != len(first) {
		t.Errorf("%d URLs scheduled after the revisits, want %d", len(again), len(first))
	}
	for _, b := range c.rdb.ZRangeWithScores(ctx, k.Revisits, 0, -1).Val() {
		if int64(b.Score) < nowMin+45 {
			t.Errorf("bucket %v due at minute %d after an unchanged revisit, want later than the first 30 minutes (now %d)", b.Member, int64(b.Score), nowMin)
		}
	}
	if n := stats("revisits_unchanged"); n != len(first) {
		t.Errorf("revisits_unchanged %d, want %d (every page is as it was)", n, len(first))
	}
	if n := stats("revisits_scheduled"); n != scheduledFirst+len(first) {
		t.Errorf("revisits_scheduled %d, want %d + %d", n, scheduledFirst, len(first))
	}
	if n := items(); n != itemsFirst {
		t.Errorf("%d items stored after the revisits, %d before: an unchanged page stores nothing new", n, itemsFirst)
	}
	t.Logf("%d pages scheduled, released when due, fetched once more by new processes and scheduled again once", len(first))
}
