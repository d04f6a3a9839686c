package cli

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
)

// zombieFrozen is how long a zombie stays stopped: twice the --min-idle of fastReclaim
// and a second, so that the other process of its stage takes its entries over and
// works on them before it wakes.
const zombieFrozen = 9 * time.Second

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

// testZombieStage crawls a demo shop of 400 pages answering after 25 ms each (two
// slots: about 5 s of fetching; 1% of its products is 3 items) with two processes of each stage, and freezes the
// first of stage once a quarter of the site was served, holding entries (see
// freezeHolding, freezeUnsent).
func testZombieStage(t *testing.T, stage string) {
	c := newPoliteCrawl(t, 400, 25*time.Millisecond)
	c.seed()
	procs := c.startStages(2, 2, 2, fastReclaim...)
	zombie, taker := procs[stage+"-1"], procs[stage+"-2"]
	reachable := int64(len(c.site.Reachable(false)))
	c.waitRequests(reachable/4, crawlTimeout, zombie)

	// A fetch process is stopped holding requests it has not sent: those are what a
	// zombie fetcher could send after another one took them over.
	var unsent []string
	if stage == streams.StageFetch {
		unsent = c.freezeUnsent(zombie, 30*time.Second)
	} else {
		c.freezeHolding(zombie, stage, 30*time.Second)
	}
	servedAtFreeze := c.site.TotalRequests()
	time.Sleep(zombieFrozen)
	if err := zombie.Signal(syscall.SIGCONT); err != nil {
		t.Fatalf("SIGCONT %s: %v", zombie.name, err)
	}
	t.Logf("%s stopped for %s with %d of %d pages served", zombie.name, zombieFrozen, servedAtFreeze, reachable)
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

	for _, u := range unsent {
		t.Logf("%s froze before requesting %s, which %s took over: the site got %d requests for it (1: the zombie did not send it)",
			zombie.name, u, taker.name, c.flight.requests(u))
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

// freezeUnsent stops the fetch process p (SIGSTOP) at a moment it holds entries whose
// requests it has not sent yet: read from the requests stream, each with a slot of its
// host, not yet at the site (delivered once, and the site never asked for the page).
// Taken over, such an entry is fetched by another process; p, once thawed, must not
// send it as well. Any other moment (its requests at the site, or answered and not
// acked yet) does not show that: it thaws p and tries again, up to timeout. It returns
// the path?query of the requests not sent.
func (c *politeCrawl) freezeUnsent(p *proc, timeout time.Duration) []string {
	c.t.Helper()
	ctx := context.Background()
	stream := streams.NewKeys(c.name).Input(streams.StageFetch)
	origin := strings.TrimSuffix(c.base, "/")
	deadline := time.Now().Add(timeout)
	for tries := 1; ; tries++ {
		if p.Exited() || time.Now().After(deadline) {
			c.t.Fatalf("%s held no request it had not sent when stopped, %d tries in %s (exited: %v)", p.name, tries, timeout, p.Exited())
		}
		if err := p.Signal(syscall.SIGSTOP); err != nil {
			c.t.Fatalf("SIGSTOP %s: %v", p.name, err)
		}
		time.Sleep(20 * time.Millisecond) // what it sent before the stop lands
		pending, err := c.rdb.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: stream, Group: streams.StageFetch,
			Consumer: p.name, Start: "-", End: "+", Count: 100}).Result()
		if err != nil {
			c.t.Fatalf("XPENDING: %v", err)
		}
		var unsent []string
		for _, pe := range pending {
			msgs, err := c.rdb.XRange(ctx, stream, pe.ID, pe.ID).Result()
			if err != nil || len(msgs) != 1 {
				continue // acked and trimmed meanwhile
			}
			payload, _ := msgs[0].Values["payload"].(string)
			r, err := spiders.UnmarshalRequest([]byte(payload))
			if err != nil {
				c.t.Fatalf("requests stream entry %s: %v", pe.ID, err)
			}
			if u := strings.TrimPrefix(r.URL, origin); pe.RetryCount == 1 && c.flight.requests(u) == 0 {
				unsent = append(unsent, u)
			}
		}
		if len(unsent) > 0 {
			c.t.Logf("%s stopped holding %d entries, %d not sent yet (try %d)", p.name, len(pending), len(unsent), tries)
			return unsent
		}
		if err := p.Signal(syscall.SIGCONT); err != nil {
			c.t.Fatalf("SIGCONT %s: %v", p.name, err)
		}
		time.Sleep(time.Duration(tries%7) * 3 * time.Millisecond) // another moment of its work
	}
}
