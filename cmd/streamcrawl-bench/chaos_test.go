package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestChaosKillNineLosesNothing is the short CI version of `streamcrawl chaos`: two
// processes per stage, a random worker SIGKILLed every second and restarted under a new
// consumer name, so its entries must be taken over with XAUTOCLAIM.
func TestChaosKillNineLosesNothing(t *testing.T) {
	srv := streamstest.Start(t)
	opt := chaosOptions{
		Pages: 1500, Procs: 2, KillEvery: time.Second, MaxKills: 6, RestartAfter: 300 * time.Millisecond,
		MinIdle: 2 * time.Second, ClaimInterval: 500 * time.Millisecond, RetryBackoff: 50 * time.Millisecond,
		Timeout: 4 * time.Minute, Latency: 20 * time.Millisecond, Concurrency: 4,
		RedisURL: srv.URL(), Dir: t.TempDir(),
	}
	var log bytes.Buffer
	opt.Log = &log
	rep, err := runChaos(context.Background(), opt)
	if rep != nil {
		var table bytes.Buffer
		rep.print(&table, opt)
		t.Logf("chaos run:\n%s%s", log.String(), table.String())
	}
	if err != nil {
		t.Fatal(err)
	}
	if !rep.ok() {
		t.Fatalf("lost pages %d, lost items %d, wrong items %d, corrupt lines %d, pending %d, done %v",
			rep.LostPages, rep.LostItems, rep.WrongItems, rep.CorruptLines, rep.Pending, rep.Done)
	}
	if rep.Kills < 3 {
		t.Fatalf("only %d kills happened before the crawl ended; the test did not test much", rep.Kills)
	}
	bound := opt.MinIdle + opt.ClaimInterval + time.Second
	for _, d := range rep.Redelivery {
		if d > bound+time.Second { // +1s: the poll that notices is itself periodic
			t.Errorf("a killed worker's entries were taken over after %s; bound %s", d, bound)
		}
	}
	if rep.DupItems*100 > rep.Pages {
		t.Errorf("duplicate items %d over 1%% of %d pages", rep.DupItems, rep.Pages)
	}
}
