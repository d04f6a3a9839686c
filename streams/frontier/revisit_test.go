package frontier_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
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
	defer f.Close(context.Background())
	for i, after := range []time.Duration{0, 30 * time.Minute, 2 * time.Hour} {
		out, err := f.ScheduleRevisit(ctx, "a.example", 0, 0, []byte(fmt.Sprintf(`{"url":"http://a.example/%d"}`, i)), after, chainOf(i, 7, 0))
		if err != nil || out != frontier.RevisitScheduled {
			t.Fatalf("schedule %d: %v %v", i, out, err)
		}
	}
	if out, err := f.ScheduleRevisit(ctx, "a.example", 0, 0, []byte(`{"url":"http://a.example/0"}`), 0, chainOf(0, 7, 0)); err != nil || out != frontier.RevisitRepeated {
		t.Fatalf("a redelivered fetch scheduled again (%v, %v), want %v", out, err, frontier.RevisitRepeated)
	}
	want := inspect.RevisitCounts{Scheduled: 3, DueNow: 1, NextHour: 1}
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
	want = inspect.RevisitCounts{Scheduled: 1, DueNow: 1, Overdue: 1}
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
		t.Cleanup(func() { _ = f.Close(context.Background()) })
		return f
	}
	s := open()
	const n = 2000
	for i := range n {
		host := fmt.Sprintf("h%d.example", i%50)
		if _, err := s.ScheduleRevisit(ctx, host, 0, 0, []byte(fmt.Sprintf("http://%s/%d", host, i)), time.Duration(i%5)*time.Minute, frontier.RevisitChain{}); err != nil {
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
// and band beside it, the list's own bytes, the bucket keys, the URL's chain mark in
// the revisit-chain hashes, sized for the crawl's URLs), logged (go test -v -run
// Bytes) and bounded: the goal is 40 B.
func TestRevisitScheduleBytesPerURL(t *testing.T) {
	t.Parallel()
	rdb := streamstest.Start(t).Client()
	ctx := context.Background()
	layout := streams.NewLayout("rvb", 1)
	k := layout.Parts[0]
	const n = 20000
	f, err := frontier.New(frontier.Config{Client: rdb, Layout: layout, SeenCache: -1, RevisitURLs: n})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close(context.Background())
	payloadBytes := 0
	for i := range n {
		host := fmt.Sprintf("h%d.example", i%200)
		u := fmt.Sprintf("http://%s/article/%d", host, i)
		p := fmt.Sprintf(`{"url":%q,"meta":{"_revisit":"3600000:a1b2c3d4e5f60718:%08x"}}`, u, i)
		payloadBytes += len(p)
		fp := sha256.Sum256([]byte(u))
		// 120 buckets of ~170, as a crawl of 240,000 URLs spreads them over a day; a
		// bucket key costs ~200 B, so 20,000 URLs over all 1,440 minutes pay 42 B each.
		chain := frontier.RevisitChain{URL: fp[:], Gen: uint32(i + 1)}
		if _, err := f.ScheduleRevisit(ctx, host, 0, 0, []byte(p), time.Duration(i%120)*time.Minute, chain); err != nil {
			t.Fatal(err)
		}
	}
	var schedule, chains int64
	minutes := rdb.ZRange(ctx, k.Revisits, 0, -1).Val()
	for _, m := range minutes {
		schedule += rdb.MemoryUsage(ctx, k.Revisits+":"+m).Val()
	}
	schedule += rdb.MemoryUsage(ctx, k.Revisits).Val()
	hashes := rdb.Keys(ctx, k.RevisitChains(0)[:len(k.RevisitChains(0))-1]+"*").Val()
	for _, h := range hashes {
		chains += rdb.MemoryUsage(ctx, h).Val()
	}
	over := float64(schedule+chains-int64(payloadBytes)) / n
	t.Logf("%d URLs in %d buckets: %d B of schedule, %d B of chain marks in %d hashes, %.1f B per URL beyond the request (%.1f B of it the chain mark; %d B of requests)",
		n, len(minutes), schedule, chains, len(hashes), over, float64(chains)/n, payloadBytes)
	if over > 40 {
		t.Fatalf("%.1f B per URL beyond the request, want at most 40", over)
	}
}

// chainOf is the chain of a revisit of URL number url, scheduled by the fetch gen (the
// revisit of the fetch prev; 0 for a fetch no revisit scheduled).
func chainOf(url int, gen, prev uint32) frontier.RevisitChain {
	fp := sha256.Sum256([]byte(fmt.Sprint("http://a.example/", url)))
	return frontier.RevisitChain{URL: fp[:], Gen: gen, Prev: prev}
}

// A URL has one revisit chain: a fetch outside the chain (the URL seeded again, or let
// through dedup again by settings.revisit.after) while its revisit is scheduled schedules
// nothing; the chain goes on from its own revisit; a chain whose revisit was released a
// day ago and never fetched is taken over by the next fetch, and a late revisit of the
// old chain then ends it.
func TestARevisitedURLKeepsOneChain(t *testing.T) {
	t.Parallel()
	rdb := streamstest.Start(t).Client()
	ctx := context.Background()
	layout := streams.NewLayout("rvchain", 1)
	k := layout.Parts[0]
	f, err := frontier.New(frontier.Config{Client: rdb, Layout: layout, SeenCache: -1, RevisitURLs: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close(context.Background())
	schedule := func(c frontier.RevisitChain) frontier.RevisitOutcome {
		t.Helper()
		out, err := f.ScheduleRevisit(ctx, "a.example", 0, 0, []byte(`{"url":"http://a.example/0"}`), 10*time.Minute, c)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, step := range []struct {
		what  string
		chain frontier.RevisitChain
		shift time.Duration
		want  frontier.RevisitOutcome
	}{
		{"the first fetch", chainOf(0, 11, 0), 0, frontier.RevisitScheduled},
		{"the first fetch redelivered", chainOf(0, 11, 0), 0, frontier.RevisitRepeated},
		{"the URL seeded again", chainOf(0, 21, 0), 0, frontier.RevisitOtherChain},
		{"the URL seeded again once its revisit is due", chainOf(0, 22, 0), 11 * time.Minute, frontier.RevisitOtherChain},
		{"the chain's revisit", chainOf(0, 12, 11), 11 * time.Minute, frontier.RevisitScheduled},
		{"a late fetch of the first fetch's revisit", chainOf(0, 13, 11), 11 * time.Minute, frontier.RevisitOtherChain},
		{"a fetch a day after a revisit never fetched", chainOf(0, 23, 0), 26 * time.Hour, frontier.RevisitScheduled},
		{"the old chain's revisit, fetched at last", chainOf(0, 14, 12), 26 * time.Hour, frontier.RevisitOtherChain},
		{"the new chain's revisit", chainOf(0, 15, 23), 27 * time.Hour, frontier.RevisitScheduled},
		{"another URL", chainOf(1, 31, 0), 27 * time.Hour, frontier.RevisitScheduled},
	} {
		f.SetRevisitShift(step.shift)
		if got := schedule(step.chain); got != step.want {
			t.Fatalf("%s: outcome %v, want %v", step.what, got, step.want)
		}
	}
	// Five scheduled in all: the two chains of URL 0 (g1, g2, s3, g4) and URL 1.
	if rv, _ := rdb.HGet(ctx, k.Counts, "revisits").Int(); rv != 5 {
		t.Fatalf("revisits counter %d, want 5", rv)
	}
}
