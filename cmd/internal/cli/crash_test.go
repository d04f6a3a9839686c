package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/spiders/demosite"
	"github.com/streamcrawl/streamcrawl/streams"
)

// crashAt is the ack before which the faulty process dies.
const crashAt = 50

// maxHeld bounds the entries a dead consumer of stage leaves pending, each of which is
// done again by another: the messages it had in flight (its window, plus the one read
// ahead) and the acks it had not sent yet (acks go out in batches every 20ms, so at most
// the crashAt-1 before the crash). The crashing processes run with GOMAXPROCS=2 so that
// the parse window (16×GOMAXPROCS) does not depend on the machine.
func maxHeld(stage string) int64 {
	window := map[string]int64{
		streams.StageFetch: 32,  // the spider's concurrency
		streams.StageParse: 32,  // handlers.Options.ParseConcurrency at GOMAXPROCS=2
		streams.StageStore: 256, // handlers.Options.StoreConcurrency
	}[stage]
	return window + 1 + crashAt - 1
}

// TestCrashBetweenOutputAndAckYieldsDuplicateNotLoss kills one stage's process right
// before it acks its 50th message, when that message's output is already in Redis (the
// worst moment: the work is done but Redis does not know), then starts a replacement.
// The crawl must lose nothing, and redo at most what the dead process held.
func TestCrashBetweenOutputAndAckYieldsDuplicateNotLoss(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		stage string
		// takeover: the replacement has another name and takes the dead consumer's
		// entries over with XAUTOCLAIM, instead of re-reading them as their owner.
		takeover bool
	}{
		{streams.StageFetch, false},
		{streams.StageParse, false},
		{streams.StageStore, false},
		{streams.StageFetch, true},
		{streams.StageParse, true},
	} {
		name := tc.stage + "/same-consumer"
		if tc.takeover {
			name = tc.stage + "/takeover"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testCrashBeforeAck(t, tc.stage, tc.takeover)
		})
	}
}

// testCrashBeforeAck runs one process per stage on a demo shop of 500 pages (the crash
// comes at the 50th ack, the dead process holds at most its window of 32 or 256), the
// one of stage with the fault hook, then a replacement for it once it has died.
func testCrashBeforeAck(t *testing.T, stage string, takeover bool) {
	site := demosite.New(500)
	c := newCluster(t, "shop", site)
	c.seed()
	crashed := stage + "-1"
	var procs []*proc
	for _, s := range []string{streams.StageFetch, streams.StageParse, streams.StageStore} {
		if s != stage {
			procs = append(procs, c.stage(s, s+"-1", nil))
		}
	}
	faulty := c.stage(stage, crashed, []string{fmt.Sprintf("%s=%s:%d", faultEnv, stage, crashAt), "GOMAXPROCS=2"})
	code, ok := faulty.Wait(crawlTimeout)
	if !ok {
		logStatus(t, c.rdb, c.name)
		t.Fatalf("%s did not crash within %s", crashed, crawlTimeout)
	}
	if want := fmt.Sprintf("fault hook: %s crashing before ack #%d", stage, crashAt); code != 137 || !strings.Contains(faulty.Stderr(), want) {
		t.Fatalf("%s: exit %d, want 137 and %q on stderr", crashed, code, want)
	}

	// What the dead consumer holds is what will be done twice.
	held := consumerPending(t, c.rdb, c.name, stage)[crashed]
	if held < 1 || held > maxHeld(stage) {
		t.Errorf("%s died holding %d pending entries, want 1..%d (at least the one it was about to ack)",
			crashed, held, maxHeld(stage))
	}

	replacement := crashed
	var extra []string
	if takeover {
		replacement = stage + "-2"
		extra = []string{"--min-idle", "1s", "--claim-interval", "200ms"}
	}
	repl := c.stage(stage, replacement, nil, extra...)
	procs = append(procs, repl)
	waitAll(t, crawlTimeout, c.rdb, c.name, procs...)
	checkExit0(t, procs...)
	t.Logf("%s crashed holding %d entries; replacement %s finished the crawl", crashed, held, replacement)
	if takeover && !strings.Contains(repl.Stderr(), "reclaimed idle entry") {
		t.Errorf("replacement %s does not log taking over the dead consumer's entries", replacement)
	}

	// Nothing lost: each product once in the file, every group drained, done.
	checkItems(t, readItems(t, c.out), site.ExpectedItems(c.base), "product", "url")
	checkFinished(t, c.rdb, c.name)
	if n := consumerPending(t, c.rdb, c.name, stage)[crashed]; n != 0 {
		t.Errorf("dead consumer %s still holds %d entries", crashed, n)
	}

	want := wantRequests(site.Reachable(false), site.ReachableKind(false, demosite.ServerError))
	got := site.Requests()
	dead := deadLetterPaths(t, c.rdb, c.name, c.base)
	wantDead := prefixed("stage=fetch ", setOf(site.ReachableKind(false, demosite.ServerError)))
	products := int64(len(site.Products()))
	items := readItemStats(t, c.rdb, c.name)
	// The parse stage drops an item whose key was queued before, so a page parsed again
	// rarely puts its item on the stream twice: only a twin parsed at the same moment, or
	// a page whose XADDs landed but whose key SADD did not before the crash. The counters
	// of the killed process may miss its last second.
	if extra := items.Entries - products; extra < 0 || extra > held+products/20 {
		t.Errorf("items stream has %d entries for %d products; want at most %d more", items.Entries, products, held+products/20)
	}
	switch stage {
	case streams.StageFetch:
		// Every URL fetched at least as often as a clean crawl does, nothing else; the
		// extra requests are the dead fetcher's entries done again.
		extraReqs := 0
		for u, n := range got {
			if want[u] == 0 {
				t.Errorf("site got %d requests for %s, which is not reachable", n, u)
			}
			extraReqs += n - want[u]
		}
		for u, n := range want {
			if got[u] < n {
				t.Errorf("%s requested %d times, want at least %d", u, got[u], n)
			}
		}
		// Each held entry is fetched once more; one that was a retry already scheduled
		// may also start its remaining retries twice.
		serverErrors := len(site.ReachableKind(false, demosite.ServerError))
		if maxExtra := int(held) + (fetchAttempts-1)*serverErrors; extraReqs < 1 || extraReqs > maxExtra {
			t.Errorf("the crash cost %d extra site requests, want 1..%d (the %d entries the dead fetcher held, plus retries)",
				extraReqs, maxExtra, held)
		}
		t.Logf("extra site requests: %d", extraReqs)
		for k := range dead {
			dead[k] = 1 // a retried URL whose retry was scheduled twice may die twice
		}
		checkRedoneItems(t, items, products)
	case streams.StageParse:
		checkRequests(t, want, got) // fetching was not disturbed
		checkRedoneItems(t, items, products)
	case streams.StageStore:
		checkRequests(t, want, got)
		if items.Scraped+items.Dropped != int64(demoItemPages(site)) {
			t.Errorf("items_scraped %d + items_duplicate_dropped %d, want %d item pages (parsing was not disturbed)",
				items.Scraped, items.Dropped, demoItemPages(site))
		}
		// The replacement stored the dead process's items again: the sink skipped those
		// already in the file (the one before the crash certainly is) and counted them.
		// (items_stored may miss the dead process's last unsent counts.)
		if items.Duplicate < 1 || items.Duplicate > held {
			t.Errorf("items_duplicate = %d after a store crash, want 1..%d (the entries the dead process held)", items.Duplicate, held)
		}
		t.Logf("items stored again and skipped by the sink: %d", items.Duplicate)
	}
	if d := diffCounts(wantDead, dead, 20); d != "" {
		t.Errorf("dead letters (-want +got):\n%s", d)
	}
}

// checkRedoneItems checks the item counters after a fetch or parse crash: the sink (which
// did not crash, so its counts are complete) stored each product once and skipped the
// items queued twice.
func checkRedoneItems(t *testing.T, got itemStats, products int64) {
	t.Helper()
	if got.Stored != products || got.Duplicate != got.Entries-products {
		t.Errorf("items_stored %d, items_duplicate %d; want %d, %d (the stream's extra entries)",
			got.Stored, got.Duplicate, products, got.Entries-products)
	}
}

// consumerPending returns the pending count of each consumer of a stage's group.
func consumerPending(t testing.TB, rdb redis.UniversalClient, crawl, stage string) map[string]int64 {
	t.Helper()
	p, err := rdb.XPending(context.Background(), streams.NewKeys(crawl).Input(stage), stage).Result()
	if err != nil {
		t.Fatalf("XPENDING %s: %v", stage, err)
	}
	return p.Consumers
}
