package frontier_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestAFinishOfAnEntryTakenOverCountsForNothing takes a fetcher's requests over (as a
// reclaim does after the fetcher slept past min-idle) and checks that the sleeper's late
// finish neither gives back the slots the new holder is using nor requeues their
// requests, while the new holder's finish does give them back; at concurrency 1 (the
// slot is the host's entry in the schedule) and 2 (a lease each).
func TestAFinishOfAnEntryTakenOverCountsForNothing(t *testing.T) {
	for _, conc := range []int{1, 2} {
		rdb := streamstest.Start(t).Client()
		ctx := context.Background()
		k := streams.NewKeys("fence")
		if err := rdb.XGroupCreateMkStream(ctx, k.Requests, streams.StageFetch, "$").Err(); err != nil {
			t.Fatal(err)
		}
		hosts := frontier.HostRule{Concurrency: conc}
		f, _ := frontier.New(frontier.Config{Client: rdb, Layout: streams.NewLayout(k.Crawl, 1), SeenCache: -1, Hosts: hosts, Window: 10, EmitHandsOut: true})
		if _, err := enqueue(ctx, f, []frontier.Candidate{hostCand(1, "a.test"), hostCand(2, "a.test"), hostCand(3, "a.test")}); err != nil {
			t.Fatal(err)
		}
		out := readAll(t, rdb, k, 10) // read by consumer "f"
		if len(out) != conc {
			t.Fatalf("concurrency %d: %d requests handed out, want %d", conc, len(out), conc)
		}
		var ids []string
		for _, m := range out {
			ids = append(ids, m.ID)
		}
		if err := rdb.XClaimJustID(ctx, &redis.XClaimArgs{Stream: k.Requests, Group: streams.StageFetch, Consumer: "g", Messages: ids}).Err(); err != nil {
			t.Fatal(err)
		}
		requeue := func(id string) frontier.Finish {
			return frontier.Finish{Host: "a.test", Lease: id, Owner: "f", Started: time.Now(), Requeue: []byte("req-again"), Wait: time.Millisecond}
		}
		for _, id := range ids {
			if _, err := f.Finish(ctx, requeue(id)); err != nil {
				t.Fatal(err)
			}
			if _, err := f.Finish(ctx, frontier.Finish{Host: "a.test", Lease: id, Owner: "f", Started: time.Now()}); err != nil {
				t.Fatal(err)
			}
		}
		for _, id := range ids {
			held, err := f.Leased(ctx, "a.test", id)
			if err != nil || !held {
				t.Errorf("concurrency %d: lease %s after the sleeper's late finish: held %v, %v; want still held (by g)", conc, id, held, err)
			}
		}
		if n := rdb.XLen(ctx, k.Requests).Val(); n != int64(conc) {
			t.Errorf("concurrency %d: %d requests handed out after the sleeper's finishes, want still %d", conc, n, conc)
		}
		if n := rdb.LLen(ctx, k.HostQueues+"a.test|0").Val(); n != 3-int64(conc) {
			t.Errorf("concurrency %d: a.test's queue holds %d after the sleeper's finishes, want %d (nothing requeued)", conc, n, 3-conc)
		}
		for _, id := range ids {
			if _, err := f.Finish(ctx, frontier.Finish{Host: "a.test", Lease: id, Owner: "g", Started: time.Now()}); err != nil {
				t.Fatal(err)
			}
			if held, _ := f.Leased(ctx, "a.test", id); held {
				t.Errorf("concurrency %d: lease %s still held after its holder's finish", conc, id)
			}
		}
		f.Close(ctx)
	}
}
