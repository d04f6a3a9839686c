package frontier_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/streamcrawl/streamcrawl/streams/dedup"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
	"github.com/streamcrawl/streamcrawl/streams/inspect"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// hostCand is a candidate of host h.
func hostCand(i int, h string) frontier.Candidate {
	c := cand(i, 0, 0)
	c.Host = h
	return c
}

func TestPartitionedFrontierQueuesEachRequestInItsHostsPartition(t *testing.T) {
	rdb := streamstest.Start(t).Client()
	ctx := context.Background()
	l := streams.NewLayout("parts", 3)
	d, err := dedup.Open(ctx, rdb, l, dedup.Config{Mode: dedup.Exact, Capacity: 3000}, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := frontier.New(frontier.Config{Client: rdb, Layout: l, Dedup: d, SeenCache: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close(context.Background())
	var cands []frontier.Candidate
	hostOf := map[string]string{}
	for i := range 60 {
		h := fmt.Sprintf("127.0.0.1:%d", 30000+i%12)
		cands = append(cands, hostCand(i, h))
		hostOf[fmt.Sprintf("req-%d", i)] = h
	}
	e, err := f.Emit(ctx, 1, append(cands, cands[:10]...), []frontier.ItemOut{{Key: []byte("k1"), Payload: []byte("item")}})
	if err != nil {
		t.Fatal(err)
	}
	if e.Requests != 60 || e.DuplicateRequests != 10 || e.Items != 1 {
		t.Fatalf("emitted %+v, want 60 requests, 10 duplicates, 1 item", e)
	}
	total := 0
	for p, k := range l.Parts {
		var members []string
		for h := range 12 {
			host := fmt.Sprintf("127.0.0.1:%d", 30000+h)
			queued, err := frontier.QueuedOf(ctx, rdb, k, host)
			if err != nil {
				t.Fatal(err)
			}
			members = append(members, queued...)
		}
		waiting(t, rdb, k)
		total += len(members)
		for _, m := range members {
			if got := l.PartitionOf(hostOf[m]); got != p {
				t.Errorf("%s (host %s) queued in partition %d, belongs in %d", m, hostOf[m], p, got)
			}
		}
		if n := rdb.XLen(ctx, k.Items).Val(); (p == 1) != (n == 1) {
			t.Errorf("partition %d has %d items; the page's item belongs in partition 1 only", p, n)
		}
	}
	if total != 60 {
		t.Fatalf("%d requests in the frontiers, want 60", total)
	}
	u, err := d.Usage(ctx)
	if err != nil || u.URLs != 60 {
		t.Fatalf("dedup holds %d URLs over the partitions, want 60 (%v)", u.URLs, err)
	}
	again, err := enqueue(ctx, f, cands)
	if err != nil || again != 0 {
		t.Fatalf("re-enqueue queued %d, want 0 (%v)", again, err)
	}
}

func TestPartitionedMaxPagesIsCrawlWide(t *testing.T) {
	rdb := streamstest.Start(t).Client()
	ctx := context.Background()
	l := streams.NewLayout("capped", 4)
	f, err := frontier.New(frontier.Config{Client: rdb, Layout: l, MaxRequests: 25, SeenCache: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close(context.Background())
	queued, over := 0, 0
	for round := range 5 {
		var cs []frontier.Candidate
		for i := range 10 {
			n := round*10 + i
			cs = append(cs, hostCand(n, fmt.Sprintf("h%d.test", n%7)))
		}
		e, err := f.Emit(ctx, 0, cs, nil)
		if err != nil {
			t.Fatal(err)
		}
		queued, over = queued+e.Requests, over+e.OverLimit
	}
	var inFrontiers int64
	for _, k := range l.Parts {
		inFrontiers += waiting(t, rdb, k)
	}
	used, _ := rdb.HGet(ctx, l.Global.Stats, "max_pages_used").Int()
	if queued != 25 || inFrontiers != 25 || over != 25 || used != 25 {
		t.Fatalf("queued %d (in frontiers %d), over the limit %d, budget used %d; want 25, 25, 25, 25", queued, inFrontiers, over, used)
	}
}

func TestPartitionedProgressSeesWorkInAnyPartition(t *testing.T) {
	rdb := streamstest.Start(t).Client()
	ctx := context.Background()
	l := streams.NewLayout("prog", 3)
	rdb.HSet(ctx, l.Global.Meta, "seeded_at", "now")
	p, err := inspect.ReadProgress(ctx, rdb, l)
	if err != nil || !p.Done() {
		t.Fatalf("empty crawl: done %v, %+v, %v", p.Done(), p, err)
	}
	f, _ := frontier.New(frontier.Config{Client: rdb, Layout: l, SeenCache: -1})
	defer f.Close(context.Background())
	c := hostCand(1, "only.test")
	if _, err := enqueue(ctx, f, []frontier.Candidate{c}); err != nil {
		t.Fatal(err)
	}
	part := l.PartitionOf("only.test")
	if p, err = inspect.ReadProgress(ctx, rdb, l); err != nil || p.Done() || p.Frontier != 1 {
		t.Fatalf("one request in partition %d: done %v, frontier %d, %v", part, p.Done(), p.Frontier, err)
	}
	// Dispatch it, read it in the fetch group: pending, not done.
	d, _ := frontier.New(frontier.Config{Client: rdb, Layout: l, Window: 10})
	if n, err := d.Dispatch(ctx); err != nil || n != 1 {
		t.Fatalf("dispatched %d, %v", n, err)
	}
	k := l.Parts[part]
	rdb.XGroupCreateMkStream(ctx, k.Requests, streams.StageFetch, "0")
	res, err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: streams.StageFetch, Consumer: "c", Streams: []string{k.Requests, ">"}, Count: 1}).Result()
	if err != nil || len(res[0].Messages) != 1 {
		t.Fatalf("read: %v", err)
	}
	if p, _ = inspect.ReadProgress(ctx, rdb, l); p.Done() || p.Stages[0].Pending != 1 {
		t.Fatalf("one pending fetch: done %v, %+v", p.Done(), p.Stages)
	}
	rdb.XAck(ctx, k.Requests, streams.StageFetch, res[0].Messages[0].ID)
	if p, _ = inspect.ReadProgress(ctx, rdb, l); !p.Done() {
		t.Fatalf("all acked: not done: %+v", p)
	}
}
