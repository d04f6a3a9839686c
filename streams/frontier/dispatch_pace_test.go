package frontier_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestPacedDispatchLeavesAnIdlePartitionAloneUntilWoken: Run's rounds look at a
// partition with nothing due once, then leave it alone for its wait (no command at
// all), and look at it again at once when this process emits there, handing out what
// it emitted. The wait is an hour here, so nothing depends on how fast the test runs.
func TestPacedDispatchLeavesAnIdlePartitionAloneUntilWoken(t *testing.T) {
	t.Parallel()
	rdb := streamstest.Start(t).Client()
	ctx := context.Background()
	layout := streams.NewLayout("pace", 2)
	for _, k := range layout.Parts {
		if err := rdb.XGroupCreateMkStream(ctx, k.Requests, streams.StageFetch, "0").Err(); err != nil {
			t.Fatal(err)
		}
	}
	f, err := frontier.New(frontier.Config{Client: rdb, Layout: layout, Window: 10, Interval: time.Minute, IdleInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close(context.Background())
	calls := func() int {
		t.Helper()
		raw, err := rdb.Info(ctx, "commandstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, line := range strings.Split(raw, "\n") {
			if rest, ok := strings.CutPrefix(line, "cmdstat_"); ok && !strings.HasPrefix(rest, "info:") {
				_, stats, _ := strings.Cut(rest, ":calls=")
				c, _ := strconv.Atoi(strings.Split(stats, ",")[0])
				n += c
			}
		}
		return n
	}
	if n, err := f.PacedRound(ctx); n != 0 || err != nil {
		t.Fatalf("first round over empty partitions moved %d (%v)", n, err)
	}
	before := calls()
	if n, err := f.PacedRound(ctx); n != 0 || err != nil {
		t.Fatalf("second round moved %d (%v)", n, err)
	}
	if got := calls() - before; got != 0 {
		t.Fatalf("a round right after one that found both partitions idle ran %d commands, want 0", got)
	}
	host := ""
	for i := 0; host == ""; i++ {
		if h := fmt.Sprintf("h%d.test", i); layout.PartitionOf(h) == 1 {
			host = h
		}
	}
	c := cand(1, 0, 1)
	c.Host = host
	if n, err := enqueue(ctx, f, []frontier.Candidate{c}); n != 1 || err != nil {
		t.Fatalf("queued %d (%v)", n, err)
	}
	if n, err := f.PacedRound(ctx); n != 1 || err != nil {
		t.Fatalf("the round after an emit in partition 1 moved %d (%v), want its request", n, err)
	}
	if n := rdb.XLen(ctx, layout.Parts[1].Requests).Val(); n != 1 {
		t.Fatalf("partition 1's requests stream holds %d entries, want 1", n)
	}
}

// TestPacedDispatchHandsOutAHostWhenItsDelayEnds: in a crawl held back only by
// politeness (a host of concurrency 1 with a delay; finishes hand out, but none comes
// when the host's time comes), the paced dispatcher hands the host's next request out
// when its delay ends, not after the dispatcher's doubled wait: a dispatch that moved
// nothing and left no host ready says when the earliest host is due. (Hosts that come
// due together, as in a polite crawl of a few hundred hosts, waited up to IdleInterval:
// the median gap of bench-broad --hosts 300 went from 530 to 620 ms at a 500 ms delay.)
func TestPacedDispatchHandsOutAHostWhenItsDelayEnds(t *testing.T) {
	t.Parallel()
	rdb := streamstest.Start(t).Client()
	ctx := context.Background()
	k := streams.NewKeys("due")
	if err := rdb.XGroupCreateMkStream(ctx, k.Requests, streams.StageFetch, "$").Err(); err != nil {
		t.Fatal(err)
	}
	const delay, interval = 1500 * time.Millisecond, 500 * time.Millisecond
	f, err := frontier.New(frontier.Config{Client: rdb, Layout: streams.NewLayout(k.Crawl, 1), SeenCache: -1,
		Hosts: frontier.HostRule{Concurrency: 1, Delay: delay}, Window: 10, FinishHandsOut: true,
		Interval: interval, IdleInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close(context.Background())
	if _, err := enqueue(ctx, f, []frontier.Candidate{hostCand(1, "a.test"), hostCand(2, "a.test")}); err != nil {
		t.Fatal(err)
	}
	if n, err := f.PacedRound(ctx); n != 1 || err != nil {
		t.Fatalf("the first round moved %d (%v), want the host's first request", n, err)
	}
	first := readAll(t, rdb, k, 10)
	if len(first) != 1 {
		t.Fatalf("%d requests handed out, want 1", len(first))
	}
	ended := time.Now()
	if _, err := f.Finish(ctx, frontier.Finish{Host: "a.test", Lease: first[0].ID, Started: ended, Ended: ended}); err != nil {
		t.Fatal(err)
	}
	// Rounds every 5 ms, as if Run's rounds came that often, until the request is out.
	for rdb.XLen(ctx, k.Requests).Val() < 2 {
		if time.Since(ended) > delay+10*time.Second {
			t.Fatalf("the host's second request was not handed out %v after its delay", 10*time.Second)
		}
		if _, err := f.PacedRound(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	late := time.Since(ended) - delay
	if late < -50*time.Millisecond || late > interval {
		t.Fatalf("the host's second request went out %v after its delay ended, want 0 to %v (the dispatcher's interval)", late, interval)
	}
}
