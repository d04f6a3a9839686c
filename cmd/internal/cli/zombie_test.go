package cli

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/streams"
)

// zombieFrozen is how long a zombie stays stopped: twice the --min-idle of fastReclaim
// and a second, so that the other process of its stage takes its entries over and
// works on them before it wakes.
const zombieFrozen = 5 * time.Second

// TestZombieStageKeepsLimitsAndItems stops (SIGSTOP) one of the two processes of a
// stage mid-crawl while it holds entries, for more than twice --min-idle: the other
// takes its entries over and does them. Then it thaws (SIGCONT) and carries on with
// what it held, a zombie: its requests, acks and outputs come late. The site must never
// see more than per_host_concurrency requests at once, nothing may be lost, at most 1%
// of the items stored twice, and the crawl must end by itself with every process
// exiting 0.
func TestZombieStageKeepsLimitsAndItems(t *testing.T) {
	t.Parallel()
	for _, stage := range []string{streams.StageFetch, streams.StageParse, streams.StageStore} {
		t.Run(stage, func(t *testing.T) {
			t.Parallel()
			testZombieStage(t, stage)
		})
	}
}

// testZombieStage crawls a demo shop of 300 pages answering after 30 ms each (two
// slots: about 5 s of fetching) with two processes of each stage, and freezes the
// first of stage once a quarter of the site was served.
func testZombieStage(t *testing.T, stage string) {
	c := newPoliteCrawl(t, 300, 30*time.Millisecond)
	c.seed()
	procs := c.startStages(2, 2, 2, fastReclaim...)
	zombie, taker := procs[stage+"-1"], procs[stage+"-2"]
	reachable := int64(len(c.site.Reachable(false)))
	c.waitRequests(reachable/4, crawlTimeout, zombie)

	held := c.freezeHolding(zombie, stage, 30*time.Second)
	servedAtFreeze := c.site.TotalRequests()
	time.Sleep(zombieFrozen)
	if err := zombie.Signal(syscall.SIGCONT); err != nil {
		t.Fatalf("SIGCONT %s: %v", zombie.name, err)
	}
	t.Logf("%s stopped for %s holding %d entries, with %d of %d pages served", zombie.name, zombieFrozen, held,
		servedAtFreeze, reachable)
	if servedAtFreeze >= reachable {
		t.Errorf("the zombie was stopped after the site was served (%d of %d pages)", servedAtFreeze, reachable)
	}

	all := procList(procs)
	waitAll(t, crawlTimeout, c.rdb, c.name, all...)
	checkExit0(t, all...)
	// The test shows nothing unless the other process took the zombie's entries over.
	if !strings.Contains(taker.Stderr(), "reclaimed idle entry") {
		t.Errorf("%s does not log taking over %s's entries", taker.name, zombie.name)
	}

	extra := c.checkEveryPageRequested()
	ic := c.checkPoliteItems(c.site.ExpectedItems(c.base))
	items := readItemStats(t, c.rdb, c.name)
	t.Logf("zombie %s: most requests in flight at the site %d (limit %d); %d requests beyond a clean crawl's; "+
		"items: %d products, %d stored twice from the same page, %d twins; items stream %d entries",
		stage, c.flight.Max(), politeSlots, extra, len(c.site.Products()), ic.redone, ic.twins, items.Entries)
	c.checkInFlight()
	checkFinished(t, c.rdb, c.name)
	if n := consumerPending(t, c.rdb, c.name, stage)[zombie.name]; n != 0 {
		t.Errorf("zombie %s still holds %d entries", zombie.name, n)
	}
	c.checkServerErrorsDead()
}
