package frontier_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// A revisit waits in its minute's bucket until the (shifted) Redis clock reaches that
// minute, then goes to its host's queue with the status counts following; a token used
// twice schedules once.
func TestRevisitsWaitForTheirMinuteThenEnterHostQueues(t *testing.T) {
	rdb := streamstest.Start(t).Client()
	ctx := context.Background()
	layout := streams.NewLayout("rv", 1)
	k := layout.Parts[0]
	f, err := frontier.New(frontier.Config{Client: rdb, Layout: layout, SeenCache: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i, after := range []time.Duration{0, 30 * time.Minute, 2 * time.Hour} {
		ok, err := f.ScheduleRevisit(ctx, "a.example", 0, 0, []byte(fmt.Sprintf(`{"url":"http://a.example/%d"}`, i)), after, fmt.Sprint("tok", i))
		if err != nil || !ok {
			t.Fatalf("schedule %d: %v %v", i, ok, err)
		}
	}
	if ok, err := f.ScheduleRevisit(ctx, "a.example", 0, 0, []byte(`{"url":"http://a.example/0"}`), 0, "tok0"); err != nil || ok {
		t.Fatalf("a redelivered fetch's token scheduled again (%v, %v), want no", ok, err)
	}
	want := frontier.RevisitCounts{Scheduled: 3, DueNow: 1, NextHour: 1}
	if got, err := f.Revisits(ctx); err != nil || got != want {
		t.Fatalf("counts %+v (%v), want %+v", got, err, want)
	}
	if n, err := f.ReleaseDue(ctx, 0, 100); err != nil || n != 1 {
		t.Fatalf("released %d (%v) now, want 1", n, err)
	}
	f.SetRevisitShift(31 * time.Minute)
	if n, err := f.ReleaseDue(ctx, 0, 100); err != nil || n != 1 {
		t.Fatalf("released %d (%v) 31 min on, want 1", n, err)
	}
	q, err := frontier.QueuedOf(ctx, rdb, k, "a.example")
	if err != nil || len(q) != 2 || q[0] != `{"url":"http://a.example/0"}` || q[1] != `{"url":"http://a.example/1"}` {
		t.Fatalf("host queue %q (%v), want pages 0 and 1", q, err)
	}
	f.SetRevisitShift(5 * time.Hour)
	want = frontier.RevisitCounts{Scheduled: 1, DueNow: 1, Overdue: 1}
	if got, err := f.Revisits(ctx); err != nil || got != want {
		t.Fatalf("counts 5 h on %+v (%v), want %+v", got, err, want)
	}
	if n, err := f.ReleaseDue(ctx, 0, 100); err != nil || n != 1 {
		t.Fatalf("released %d (%v) 5 h on, want 1", n, err)
	}
	if n := rdb.ZCard(ctx, k.Revisits).Val(); n != 0 {
		t.Fatalf("%d buckets left after releasing every revisit, want 0", n)
	}
	if w, _ := rdb.HGet(ctx, k.Counts, "waiting").Int(); w != 3 {
		t.Fatalf("waiting %d, want the 3 revisits", w)
	}
}

// Fetch processes releasing at once (each call one script, as a kill -9 between calls
// leaves it) put every scheduled revisit in a host queue exactly once.
func TestConcurrentReleasesLoseAndDoubleNone(t *testing.T) {
	rdb := streamstest.Start(t).Client()
	ctx := context.Background()
	layout := streams.NewLayout("rvc", 1)
	k := layout.Parts[0]
	open := func() *frontier.Frontier {
		f, err := frontier.New(frontier.Config{Client: rdb, Layout: layout, SeenCache: -1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(f.Close)
		return f
	}
	s := open()
	const n = 2000
	for i := range n {
		host := fmt.Sprintf("h%d.example", i%50)
		if _, err := s.ScheduleRevisit(ctx, host, 0, 0, []byte(fmt.Sprintf("http://%s/%d", host, i)), time.Duration(i%5)*time.Minute, ""); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	for range 4 {
		f := open()
		f.SetRevisitShift(10 * time.Minute)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				m, err := f.ReleaseDue(ctx, 0, 7)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				total += m
				mu.Unlock()
				if m == 0 {
					return
				}
			}
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for h := range 50 {
		q, err := frontier.QueuedOf(ctx, rdb, k, fmt.Sprintf("h%d.example", h))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range q {
			if seen[e] {
				t.Fatalf("%s queued twice", e)
			}
			seen[e] = true
		}
	}
	rv, _ := rdb.HGet(ctx, k.Counts, "revisits").Int()
	if total != n || len(seen) != n || rv != 0 {
		t.Fatalf("released %d, queued %d distinct, counter %d; want %d, %d, 0", total, len(seen), rv, n, n)
	}
}

// The schedule's memory per scheduled URL beyond the encoded request itself (the host
// and band beside it, the list's own bytes, the bucket keys), logged (go test -v -run
// Bytes) and bounded: the goal is 40 B.
func TestRevisitScheduleBytesPerURL(t *testing.T) {
	rdb := streamstest.Start(t).Client()
	ctx := context.Background()
	layout := streams.NewLayout("rvb", 1)
	k := layout.Parts[0]
	f, err := frontier.New(frontier.Config{Client: rdb, Layout: layout, SeenCache: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const n = 20000
	payloadBytes := 0
	for i := range n {
		host := fmt.Sprintf("h%d.example", i%200)
		p := fmt.Sprintf(`{"url":"http://%s/article/%d"}`, host, i)
		payloadBytes += len(p)
		// 120 buckets of ~170, as a crawl of 240,000 URLs spreads them over a day; a
		// bucket key costs ~200 B, so 20,000 URLs over all 1,440 minutes pay 42 B each.
		if _, err := f.ScheduleRevisit(ctx, host, 0, 0, []byte(p), time.Duration(i%120)*time.Minute, ""); err != nil {
			t.Fatal(err)
		}
	}
	var total int64
	minutes := rdb.ZRange(ctx, k.Revisits, 0, -1).Val()
	for _, m := range minutes {
		total += rdb.MemoryUsage(ctx, k.Revisits+":"+m).Val()
	}
	total += rdb.MemoryUsage(ctx, k.Revisits).Val()
	over := float64(total-int64(payloadBytes)) / n
	t.Logf("%d URLs in %d buckets: %d B in all, %.1f B per URL, %.1f B per URL beyond the request (%d B of requests)",
		n, len(minutes), total, float64(total)/n, over, payloadBytes)
	if over > 40 {
		t.Fatalf("%.1f B per URL beyond the request, want at most 40", over)
	}
}
