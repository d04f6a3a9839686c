package frontier_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// Run's rounds over the delayed retries look at a partition's set only when something
// there may be due: a partition with nothing delayed costs no command round after
// round; a retry this process schedules is looked at in the next round and moved when
// due; one another process schedules is found by the fallback sweep.
func TestRetryRoundsLookOnlyWhenSomethingMayBeDue(t *testing.T) {
	t.Parallel()
	rdb := streamstest.Start(t).Client()
	ctx := context.Background()
	layout := streams.NewLayout("pace", 4)
	open := func() (*frontier.Frontier, *time.Time) {
		f, err := frontier.New(frontier.Config{Client: rdb, Layout: layout, RetryInterval: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = f.Close(context.Background()) })
		at := time.Now()
		f.SetClock(func() time.Time { return at })
		return f, &at
	}
	mover, clock := open()
	other, _ := open()
	zranges := func() int {
		info := rdb.Info(ctx, "commandstats").Val()
		_, rest, ok := strings.Cut(info, "cmdstat_zrange:calls=")
		if !ok {
			return 0
		}
		n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
		return n
	}
	round := func() {
		t.Helper()
		if err := mover.MoveAllDue(ctx); err != nil {
			t.Fatal(err)
		}
	}
	waiting := func() (n int64) {
		for _, k := range layout.Parts {
			v, _ := rdb.HGet(ctx, k.Counts, "waiting").Int64()
			n += v
		}
		return n
	}

	round() // the first round looks at every partition
	base := zranges()
	for range 10 {
		*clock = clock.Add(100 * time.Millisecond)
		round()
	}
	if n := zranges() - base; n != 0 {
		t.Fatalf("10 rounds over 4 empty delayed sets within the sweep looked %d times, want 0", n)
	}

	// A retry this process schedules, due at once: the next round looks at its
	// partition only, and moves it.
	if err := mover.Retry(ctx, "a.example", 0, 0, []byte("a"), time.Now()); err != nil {
		t.Fatal(err)
	}
	before := zranges()
	round()
	if n := zranges() - before; n != 1 {
		t.Fatalf("the round after a retry looked %d times, want 1 (its partition)", n)
	}
	if n := waiting(); n != 1 {
		t.Fatalf("%d requests back in their host queues after the round, want 1", n)
	}

	// One another process schedules, due at once: found by the sweep, not before.
	if err := other.Retry(ctx, "b.example", 0, 0, []byte("b"), time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	*clock = clock.Add(100 * time.Millisecond)
	round()
	if n := waiting(); n != 1 {
		t.Fatalf("%d requests back before the sweep, want 1 (the other process's retry waits for it)", n)
	}
	*clock = clock.Add(3 * time.Second)
	for range 2 { // the sweep looks, and moves it
		round()
	}
	if n := waiting(); n != 2 {
		t.Fatalf("%d requests back after the sweep, want 2", n)
	}
	if n, _ := rdb.ZCard(ctx, layout.ForHost("b.example").Delayed).Result(); n != 0 {
		t.Fatalf("the delayed set still holds %d, want 0", n)
	}
}
