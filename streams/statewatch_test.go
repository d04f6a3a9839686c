package streams_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestEpochIsWrittenOnceAndChecked: the first open of a crawl writes its epoch, later
// opens and ReadLayout read the same one; CheckEpoch passes while it is there and fails
// with ErrStateLost, saying which, once it is gone or another.
func TestEpochIsWrittenOnceAndChecked(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := t.Context()
	l, _, err := streams.OpenLayout(ctx, rdb, "ep", 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Epoch) != 16 {
		t.Fatalf("epoch %q, want 16 hex digits", l.Epoch)
	}
	again, _, err := streams.OpenLayout(ctx, rdb, "ep", 3)
	if err != nil || again.Epoch != l.Epoch || len(again.Parts) != 1 {
		t.Fatalf("second open: epoch %q, %d partitions, %v; want %q and 1", again.Epoch, len(again.Parts), err, l.Epoch)
	}
	read, err := streams.ReadLayout(ctx, rdb, "ep")
	if err != nil || read.Epoch != l.Epoch {
		t.Fatalf("ReadLayout: epoch %q, %v; want %q", read.Epoch, err, l.Epoch)
	}
	if err := streams.CheckEpoch(ctx, rdb, l); err != nil {
		t.Fatalf("CheckEpoch of a live crawl: %v", err)
	}
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := streams.CheckEpoch(ctx, rdb, l); !errors.Is(err, streams.ErrStateLost) || !strings.Contains(err.Error(), "no epoch in Redis any more") {
		t.Errorf("CheckEpoch after FLUSHALL: %v, want ErrStateLost saying the epoch is gone", err)
	}
	renewed, _, err := streams.OpenLayout(ctx, rdb, "ep", 1)
	if err != nil || renewed.Epoch == l.Epoch {
		t.Fatalf("open after FLUSHALL: epoch %q (%v), want a new one", renewed.Epoch, err)
	}
	if err := streams.CheckEpoch(ctx, rdb, l); !errors.Is(err, streams.ErrStateLost) || !strings.Contains(err.Error(), "created again") {
		t.Errorf("CheckEpoch of the old life: %v, want ErrStateLost saying the crawl was created again", err)
	}
	// A crawl from before epochs gets one at its next open.
	if err := rdb.HSet(ctx, streams.NewKeys("old").Meta, "partitions", 2).Err(); err != nil {
		t.Fatal(err)
	}
	old, _, err := streams.OpenLayout(ctx, rdb, "old", 1)
	if err != nil || len(old.Epoch) != 16 || len(old.Parts) != 2 {
		t.Errorf("open of a crawl without an epoch: epoch %q, %d partitions, %v; want a new epoch and the stored 2", old.Epoch, len(old.Parts), err)
	}
}

// TestStateWatchStopsWhenTheCrawlIsGone runs a StateWatch over a crawl and empties
// Redis: Run returns ErrStateLost; meanwhile a subscriber of the crawl, whose group is
// gone with the rest, does not create it again.
func TestStateWatchStopsWhenTheCrawlIsGone(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := t.Context()
	l, _, err := streams.OpenLayout(ctx, rdb, "gone", 1)
	if err != nil {
		t.Fatal(err)
	}
	w := &streams.StateWatch{Client: rdb, Layout: l, Interval: 100 * time.Millisecond}
	sub, err := streams.NewSubscriber(streams.SubscriberConfig{Client: rdb, Group: "g", Consumer: "c", DeadStream: l.Global.Dead,
		BlockTime: 100 * time.Millisecond, CheckState: w.Check})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if _, err := sub.Subscribe(ctx, l.Global.Requests); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	time.Sleep(300 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("state watch returned with the crawl in place: %v", err)
	default:
	}
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, streams.ErrStateLost) {
			t.Errorf("state watch after FLUSHALL: %v, want ErrStateLost", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("state watch still running 10 s after FLUSHALL")
	}
	time.Sleep(500 * time.Millisecond) // several reads that find the group gone
	if n, err := rdb.Exists(ctx, l.Global.Requests).Result(); err != nil || n != 0 {
		t.Errorf("the requests stream exists again after FLUSHALL (%d, %v): the subscriber recreated its group", n, err)
	}
}

// TestStateWatchReportsAFailover runs a StateWatch on a Sentinel rig and kills the
// primary: OnFailover hears that the replica took over, once; the crawl's epoch,
// replicated before, is still there.
func TestStateWatchReportsAFailover(t *testing.T) {
	t.Parallel()
	s := streamstest.StartSentinel(t, 1)
	ctx := t.Context()
	c, err := streams.Connect(ctx, streams.ClientOptions{URL: s.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l, _, err := streams.OpenLayout(ctx, c, "fo", 1)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := c.Do(ctx, "WAIT", 1, 5000).Int(); err != nil || n != 1 {
		t.Fatalf("WAIT for the replica: %d, %v", n, err)
	}
	var mu sync.Mutex
	var seen []string
	w := &streams.StateWatch{Client: c, Layout: l, Interval: 100 * time.Millisecond, OnFailover: func(_ context.Context, what string) {
		mu.Lock()
		seen = append(seen, what)
		mu.Unlock()
	}}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	time.Sleep(300 * time.Millisecond)
	old := s.KillPrimary()
	s.WaitPrimary(old)
	deadline := time.Now().Add(15 * time.Second)
	for {
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		if n > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // later looks must not report it again
	cancel()
	if err := <-done; err != nil {
		t.Errorf("state watch: %v, want nil (the crawl's state survived the failover)", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || !strings.Contains(seen[0], "took over from the primary") {
		t.Errorf("failovers reported %q, want one", seen)
	}
}
