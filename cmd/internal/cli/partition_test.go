package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// partitionFor is how long the fetch process is cut off from Redis: long enough for
// every periodic task of the process to fail many times over, so that a log line per
// failed call would show.
const partitionFor = 60 * time.Second

// maxPartitionLogLines bounds the WARN and ERROR lines the cut-off process may write
// during the partition: a line when it loses Redis, a reminder now and then, not a line
// per failed call.
const maxPartitionLogLines = 10

// TestFetcherPartitionedFromRedis cuts one of two fetch processes off from Redis (its
// connections through a fault proxy that drops everything, open connections and new
// ones, without closing any) for a minute mid-crawl; the other fetch process goes on.
// The site slows down meanwhile (a second per page) so that there is work left for
// both after the partition. Nothing may be lost, the site may never see more than
// per_host_concurrency requests at once, the cut-off process must come back by itself
// (and fetch again), the crawl must end by itself with every process exiting 0, and
// the cut-off process must say what happened in a few lines, not one per failed call.
func TestFetcherPartitionedFromRedis(t *testing.T) {
	t.Parallel()
	c := newPoliteCrawl(t, 400, 20*time.Millisecond)
	proxy := streamstest.StartFaultProxy(t, c.srv.Addr)
	c.seed()
	cut := c.stageVia(streams.StageFetch, "fetch-1", "redis://"+proxy.Addr+"/0", fastReclaim...)
	procs := []*proc{cut}
	for _, s := range []string{streams.StageFetch + "-2", streams.StageParse + "-1", streams.StageStore + "-1"} {
		stage, _, _ := strings.Cut(s, "-")
		procs = append(procs, c.stageVia(stage, s, c.srv.URL(), fastReclaim...))
	}
	reachable := int64(len(c.site.Reachable(false)))
	c.waitRequests(reachable/4, crawlTimeout, procs...)

	c.slow.set(time.Second)
	logAtCut := len(cut.Stderr())
	if err := proxy.Partition(); err != nil {
		t.Fatal(err)
	}
	t.Logf("fetch-1 cut off from Redis for %s with %d of %d pages served (holding %d entries)", partitionFor,
		c.site.TotalRequests(), reachable, consumerPending(t, c.rdb, c.name, streams.StageFetch)[cut.name])
	time.Sleep(partitionFor)
	logAtHeal := len(cut.Stderr())
	if err := proxy.Heal(); err != nil {
		t.Fatal(err)
	}
	during := cut.Stderr()[logAtCut:logAtHeal]
	c.slow.set(20 * time.Millisecond)
	servedAtHeal := c.site.TotalRequests()
	heldAtHeal := consumerPending(t, c.rdb, c.name, streams.StageFetch)[cut.name]
	t.Logf("healed with %d of %d pages served; fetch-1 holds %d entries", servedAtHeal, reachable, heldAtHeal)
	if servedAtHeal >= reachable {
		t.Errorf("the site was served during the partition (%d of %d pages): fetch-1 has nothing left to come back to",
			servedAtHeal, reachable)
	}
	if heldAtHeal != 0 {
		t.Errorf("fetch-1 still holds %d entries after a %s partition: fetch-2 did not take them over", heldAtHeal, partitionFor)
	}

	// fetch-1 is back when it reads entries again (those it held were taken over
	// during the partition).
	back := false
	deadline := time.Now().Add(crawlTimeout)
	for !cut.Exited() && time.Now().Before(deadline) {
		if !back && consumerPending(t, c.rdb, c.name, streams.StageFetch)[cut.name] > 0 {
			back = true
		}
		time.Sleep(5 * time.Millisecond)
	}
	waitAll(t, crawlTimeout, c.rdb, c.name, procs...)
	checkExit0(t, procs...)
	if !back {
		t.Errorf("fetch-1 read no entry after the partition healed")
	}

	lines := warnLines(during)
	t.Logf("fetch-1 wrote %d WARN/ERROR lines during the %s partition:\n%s", len(lines), partitionFor, strings.Join(lines, "\n"))
	if len(lines) > maxPartitionLogLines {
		t.Errorf("fetch-1 wrote %d WARN/ERROR lines during the partition, want at most %d (a line per state change)",
			len(lines), maxPartitionLogLines)
	}
	if !strings.Contains(during, "lost Redis") {
		t.Errorf("fetch-1 does not say it lost Redis during the partition")
	}
	if after := cut.Stderr()[logAtHeal:]; !strings.Contains(after, "Redis back") {
		t.Errorf("fetch-1 does not say Redis is back after the partition")
	}

	c.checkComplete("partition")
	c.checkInFlight()
}

// warnLines returns the lines of a console log at level WARN or ERROR.
func warnLines(log string) []string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "\tWARN\t") || strings.Contains(l, "\tERROR\t") {
			out = append(out, l)
		}
	}
	return out
}
