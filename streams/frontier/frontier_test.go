package frontier_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/streams/frontier"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// enqueue queues cands (Emit without items) and returns how many it queued.
func enqueue(ctx context.Context, f *frontier.Frontier, cands []frontier.Candidate) (int, error) {
	e, err := f.Emit(ctx, 0, cands, nil)
	return e.Requests, err
}

func cand(i, priority, depth int) frontier.Candidate {
	return frontier.Candidate{Fingerprint: []byte(fmt.Sprintf("fp-%04d", i)), Payload: []byte(fmt.Sprintf("req-%d", i)),
		Priority: priority, Depth: depth}
}

// streamPayloads returns the payloads of the requests stream in order.
func streamPayloads(t *testing.T, rdb redis.UniversalClient, k streams.Keys) []string {
	t.Helper()
	msgs, err := rdb.XRange(context.Background(), k.Requests, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range msgs {
		out = append(out, m.Values["payload"].(string))
	}
	return out
}

// waiting returns the frontier's count of requests waiting in host queues, checked
// against the queues' own sizes; every queue that holds requests must be marked in its
// host's state (a mark may outlive its queue until a pop finds it empty).
func waiting(t *testing.T, rdb redis.UniversalClient, k streams.Keys) int64 {
	t.Helper()
	ctx := context.Background()
	n, err := rdb.HGet(ctx, k.Counts, "waiting").Int64()
	if err != nil && err != redis.Nil {
		t.Fatal(err)
	}
	var inQueues int64
	keys, err := rdb.Keys(ctx, k.HostQueues+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range keys {
		inQueues += rdb.LLen(ctx, q).Val()
		host, band, _ := strings.Cut(strings.TrimPrefix(q, k.HostQueues), "|")
		if rdb.HGet(ctx, k.HostState(host), "q"+band).Val() == "" {
			t.Fatalf("queue %s holds requests but its host's state does not mark band %s", q, band)
		}
	}
	if n != inQueues {
		t.Fatalf("waiting counter %d, but the host queues hold %d", n, inQueues)
	}
	return n
}

func TestFrontierOrders(t *testing.T) {
	tests := []struct {
		order string
		want  string
	}{
		{"priority", "[req-3 req-1 req-4 req-0 req-2]"},
		{"breadth-first", "[req-4 req-0 req-2 req-3 req-1]"},
		{"depth-first", "[req-3 req-1 req-2 req-0 req-4]"},
	}
	for _, tt := range tests {
		t.Run(string(tt.order), func(t *testing.T) {
			srv := streamstest.Start(t)
			rdb := srv.Client()
			ctx := context.Background()
			k := streams.NewKeys("order")
			f, err := frontier.New(frontier.Config{Client: rdb, Layout: streams.NewLayout(k.Crawl, 1), Order: tt.order})
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close(context.Background())
			// (index, priority, depth)
			if _, err := enqueue(ctx, f, []frontier.Candidate{cand(0, 0, 1), cand(1, 5, 2), cand(2, 0, 1), cand(3, 10, 2), cand(4, 1, 0)}); err != nil {
				t.Fatal(err)
			}
			d, _ := frontier.New(frontier.Config{Client: rdb, Layout: streams.NewLayout(k.Crawl, 1), Window: 100})
			if n, err := d.Dispatch(ctx); err != nil || n != 5 {
				t.Fatalf("dispatched %d, %v; want 5", n, err)
			}
			if got := fmt.Sprint(streamPayloads(t, rdb, k)); got != tt.want {
				t.Fatalf("order (-want +got):\n-%s\n+%s", tt.want, got)
			}
		})
	}
}

func TestEmitIntoAnEmptyFrontierFillsTheWindowInOrderAndQueuesTheRest(t *testing.T) {
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	k := streams.NewKeys("direct")
	if err := rdb.XGroupCreateMkStream(ctx, k.Requests, streams.StageFetch, "$").Err(); err != nil {
		t.Fatal(err)
	}
	f, _ := frontier.New(frontier.Config{Client: rdb, Layout: streams.NewLayout(k.Crawl, 1), Window: 3, EmitHandsOut: true})
	defer f.Close(context.Background())
	// (index, priority, depth): the window takes the three best, the frontier the rest.
	n, err := enqueue(ctx, f, []frontier.Candidate{cand(0, 0, 1), cand(1, 5, 2), cand(2, 0, 1), cand(3, 10, 2), cand(4, 1, 0)})
	if err != nil || n != 5 {
		t.Fatalf("queued %d, %v; want 5", n, err)
	}
	if got, want := fmt.Sprint(streamPayloads(t, rdb, k)), "[req-3 req-1 req-4]"; got != want {
		t.Fatalf("stream = %s, want %s", got, want)
	}
	if got, _ := frontier.QueuedOf(ctx, rdb, k, ""); fmt.Sprint(got) != "[req-0 req-2]" {
		t.Fatalf("host queue = %v, want [req-0 req-2]", got)
	}
	if n := waiting(t, rdb, k); n != 2 {
		t.Fatalf("waiting = %d, want 2", n)
	}
	// The window is full now: a new request waits in its host's queue for the
	// Dispatcher, even though it outranks what the queue holds.
	if _, err := enqueue(ctx, f, []frontier.Candidate{cand(5, 20, 0)}); err != nil {
		t.Fatal(err)
	}
	if got := rdb.XLen(ctx, k.Requests).Val(); got != 3 {
		t.Fatalf("stream holds %d after an emit into a non-empty frontier, want 3", got)
	}
	// The stream's message IDs name distinct messages.
	msgs, _ := rdb.XRange(ctx, k.Requests, "-", "+").Result()
	uuids := map[string]bool{}
	for _, m := range msgs {
		uuids[m.Values["_watermill_message_uuid"].(string)] = true
	}
	if len(uuids) != 3 {
		t.Fatalf("message uuids %v, want 3 distinct", uuids)
	}
}

func TestDispatchKeepsTheWindowAndAHighPrioritySeedJumpsTheBacklog(t *testing.T) {
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	k := streams.NewKeys("window")
	f, _ := frontier.New(frontier.Config{Client: rdb, Layout: streams.NewLayout(k.Crawl, 1)})
	defer f.Close(context.Background())
	var backlog []frontier.Candidate
	for i := 0; i < 50; i++ {
		backlog = append(backlog, cand(i, 0, 1))
	}
	if _, err := enqueue(ctx, f, backlog); err != nil {
		t.Fatal(err)
	}
	if err := rdb.XGroupCreateMkStream(ctx, k.Requests, streams.StageFetch, "0").Err(); err != nil {
		t.Fatal(err)
	}
	d, _ := frontier.New(frontier.Config{Client: rdb, Layout: streams.NewLayout(k.Crawl, 1), Window: 10})
	if n, _ := d.Dispatch(ctx); n != 10 {
		t.Fatalf("first round moved %d, want the window of 10", n)
	}
	if n, _ := d.Dispatch(ctx); n != 0 {
		t.Fatalf("second round moved %d with the window full, want 0", n)
	}
	// A fetcher reads 4; a priority-10 request arrives; the next round tops the window up
	// with it first.
	rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: streams.StageFetch, Consumer: "c", Streams: []string{k.Requests, ">"}, Count: 4})
	if _, err := enqueue(ctx, f, []frontier.Candidate{cand(99, 10, 1)}); err != nil {
		t.Fatal(err)
	}
	if n, _ := d.Dispatch(ctx); n != 4 {
		t.Fatalf("refill moved %d, want 4", n)
	}
	got := streamPayloads(t, rdb, k)
	if got[10] != "req-99" {
		t.Fatalf("first request after the refill = %s, want the priority-10 req-99 (stream %v)", got[10], got)
	}
	if n := waiting(t, rdb, k); n != 50+1-14 {
		t.Fatalf("frontier holds %d, want 37", n)
	}
}

func TestDispatcherCrashBetweenPopAndPushLosesAndDuplicatesNothing(t *testing.T) {
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	k := streams.NewKeys("fault")
	f, _ := frontier.New(frontier.Config{Client: rdb, Layout: streams.NewLayout(k.Crawl, 1)})
	defer f.Close(context.Background())
	var cs []frontier.Candidate
	for i := 0; i < 30; i++ {
		cs = append(cs, cand(i, 0, 0))
	}
	if _, err := enqueue(ctx, f, cs); err != nil {
		t.Fatal(err)
	}
	crash := errors.New("killed")
	bad, _ := frontier.New(frontier.Config{Client: rdb, Layout: streams.NewLayout(k.Crawl, 1), Window: 20})
	bad.SetBeforeRun(func(int) error { return crash })
	if _, err := bad.Dispatch(ctx); err == nil {
		t.Fatal("the fault hook did not fire")
	}
	if n := waiting(t, rdb, k); n != 30 {
		t.Fatalf("after the crash the frontier holds %d, want all 30", n)
	}
	if n := rdb.XLen(ctx, k.Requests).Val(); n != 0 {
		t.Fatalf("after the crash the stream holds %d, want 0", n)
	}
	good, _ := frontier.New(frontier.Config{Client: rdb, Layout: streams.NewLayout(k.Crawl, 1), Window: 100})
	if n, err := good.Dispatch(ctx); err != nil || n != 30 {
		t.Fatalf("dispatch after the crash moved %d, %v; want 30", n, err)
	}
	seen := map[string]bool{}
	for _, p := range streamPayloads(t, rdb, k) {
		if seen[p] {
			t.Fatalf("%s dispatched twice", p)
		}
		seen[p] = true
	}
	if len(seen) != 30 {
		t.Fatalf("%d distinct requests in the stream, want 30", len(seen))
	}
}

func TestMaxPagesStopsQueueing(t *testing.T) {
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	k := streams.NewKeys("maxpages")
	f, _ := frontier.New(frontier.Config{Client: rdb, Layout: streams.NewLayout(k.Crawl, 1), MaxRequests: 7})
	defer f.Close(context.Background())
	var cs []frontier.Candidate
	for i := 0; i < 10; i++ {
		cs = append(cs, cand(i, 0, 0))
	}
	e, err := f.Emit(ctx, 0, cs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if e.Requests != 7 || e.OverLimit != 3 {
		t.Fatalf("emitted %+v, want 7 queued and 3 over the limit", e)
	}
}

func TestRevisitQueuesAURLAgainAfterTheInterval(t *testing.T) {
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	k := streams.NewKeys("revisit")
	f, _ := frontier.New(frontier.Config{Client: rdb, Layout: streams.NewLayout(k.Crawl, 1), Revisit: 400 * time.Millisecond, SeenCache: -1})
	defer f.Close(context.Background())
	steps := []struct {
		wait time.Duration
		want int
	}{{0, 1}, {0, 0}, {500 * time.Millisecond, 1}, {0, 0}}
	for i, s := range steps {
		time.Sleep(s.wait)
		n, err := enqueue(ctx, f, []frontier.Candidate{cand(1, 0, 0)})
		if err != nil {
			t.Fatal(err)
		}
		if n != s.want {
			t.Fatalf("step %d: queued %d, want %d", i, n, s.want)
		}
	}
}
