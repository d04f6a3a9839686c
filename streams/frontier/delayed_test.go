package frontier_test

import (
	"context"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// A retry is due on the Redis clock, whatever the clocks of the fetchers that schedule
// and move it: one scheduled by a fetcher whose clock runs an hour ahead is moved by
// another on time, and one scheduled by a fetcher an hour behind keeps its wait.
func TestDelayedRetriesAreDueOnTheRedisClock(t *testing.T) {
	rdb := streamstest.Start(t).Client()
	ctx := context.Background()
	layout := streams.NewLayout("clock", 1)
	open := func(skew time.Duration) *frontier.Frontier {
		d, err := frontier.New(frontier.Config{Client: rdb, Layout: layout})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = d.Close(context.Background()) })
		d.SetClock(func() time.Time { return time.Now().Add(skew) })
		return d
	}
	ahead, behind, mover := open(time.Hour), open(-time.Hour), open(0)
	queued := func() int64 { n, _ := rdb.HGet(ctx, layout.Parts[0].Counts, "waiting").Int64(); return n }

	// 200 ms from now on the clock of the fetcher that schedules it.
	if err := ahead.Retry(ctx, "a.example", 0, 0, []byte("a"), time.Now().Add(time.Hour+200*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if err := behind.Retry(ctx, "b.example", 0, 0, []byte("b"), time.Now().Add(-time.Hour+5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if n, err := mover.MoveDue(ctx, 0, 100); err != nil || n != 0 {
		t.Fatalf("moved %d at once (%v), want 0: both retries wait", n, err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for queued() < 1 && time.Now().Before(deadline) {
		if _, err := mover.MoveDue(ctx, 0, 100); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := queued(); n != 1 {
		t.Fatalf("%d requests back in their host queues 3 s after a retry due in 200 ms and one due in 5 s, want 1", n)
	}
	if n := rdb.ZCard(ctx, layout.Parts[0].Delayed).Val(); n != 1 {
		t.Fatalf("delayed set holds %d, want the retry due in 5 s", n)
	}
}
