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

func TestAFinishHandsTheHostsNextRequestOutWithinTheWindow(t *testing.T) {
	rdb := streamstest.Start(t).Client()
	ctx := context.Background()
	k := streams.NewKeys("handout")
	if err := rdb.XGroupCreateMkStream(ctx, k.Requests, streams.StageFetch, "$").Err(); err != nil {
		t.Fatal(err)
	}
	hosts := frontier.HostRule{Concurrency: 1}
	f, _ := frontier.New(frontier.Config{Client: rdb, Layout: streams.NewLayout(k.Crawl, 1), SeenCache: -1, Hosts: hosts, Window: 10, EmitHandsOut: true})
	defer f.Close(context.Background())
	if _, err := enqueue(ctx, f, []frontier.Candidate{hostCand(1, "a.test"), hostCand(2, "a.test"), hostCand(3, "a.test"),
		hostCand(4, "b.test"), hostCand(5, "b.test")}); err != nil {
		t.Fatal(err)
	}
	first := readAll(t, rdb, k, 10) // one per host at concurrency 1
	if len(first) != 2 {
		t.Fatalf("%d requests handed out at concurrency 1 over two hosts, want 2", len(first))
	}
	h, _ := frontier.New(frontier.Config{Client: rdb, Layout: streams.NewLayout("handout", 1), Hosts: hosts, Window: 1, FinishHandsOut: true})
	defer h.Close(context.Background())
	// a.test's finish frees its slot: its next request goes out in the same call, no
	// dispatcher round needed.
	if _, err := h.Finish(ctx, frontier.Finish{Host: "a.test", Lease: first[0].ID, Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if n := rdb.XLen(ctx, k.Requests).Val(); n != 3 {
		t.Fatalf("requests stream holds %d after a finish, want 3 (the freed slot's request handed out)", n)
	}
	// That request is unread and the window is 1: b.test's finish frees a slot but
	// hands nothing out.
	if _, err := h.Finish(ctx, frontier.Finish{Host: "b.test", Lease: first[1].ID, Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if n := rdb.XLen(ctx, k.Requests).Val(); n != 3 {
		t.Fatalf("requests stream holds %d with the window full, want 3", n)
	}
	if s := rdb.ZScore(ctx, k.Ready, "b.test"); s.Err() != nil {
		t.Fatalf("b.test not ready after its finish with the window full: %v", s.Err())
	}
	if f := rdb.HGet(ctx, k.HostState("b.test"), "f").Val(); f != "" && f != "0" {
		t.Fatalf("b.test in flight %q, want none", f)
	}
}

func TestConcurrentFinishesShareScriptCallsAndKeepEveryHostsCount(t *testing.T) {
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	k := streams.NewKeys("many")
	if err := rdb.XGroupCreateMkStream(ctx, k.Requests, streams.StageFetch, "$").Err(); err != nil {
		t.Fatal(err)
	}
	hosts := frontier.HostRule{Concurrency: 4}
	f, _ := frontier.New(frontier.Config{Client: rdb, Layout: streams.NewLayout(k.Crawl, 1), SeenCache: -1, Hosts: hosts, Window: 1000, EmitHandsOut: true})
	defer f.Close(context.Background())
	const nHosts, perHost = 10, 20
	var cs []frontier.Candidate
	for i := range nHosts * perHost {
		cs = append(cs, hostCand(i, fmt.Sprintf("h%d.test", i%nHosts)))
	}
	if _, err := enqueue(ctx, f, cs); err != nil {
		t.Fatal(err)
	}
	h, _ := frontier.New(frontier.Config{Client: rdb, Layout: streams.NewLayout("many", 1), Hosts: hosts, Window: 1000, FinishHandsOut: true})
	defer h.Close(context.Background())
	before := evalshaCalls(t, srv)
	// Fetchers finish every request they read, in parallel; each finish hands the
	// next out. Every request must come out exactly once, never more than 4 of a host
	// at a time.
	seen := map[string]bool{}
	for round := 0; len(seen) < nHosts*perHost && round < 100; round++ {
		msgs := readAll(t, rdb, k, 1000)
		byHost := map[string]int{}
		var wg sync.WaitGroup
		for _, m := range msgs {
			p := m.Values["payload"].(string)
			if seen[p] {
				t.Fatalf("%s handed out twice", p)
			}
			seen[p] = true
			var i int
			fmt.Sscanf(p, "req-%d", &i)
			host := fmt.Sprintf("h%d.test", i%nHosts)
			if byHost[host]++; byHost[host] > 4 {
				t.Fatalf("%d requests of %s out at once, want at most 4", byHost[host], host)
			}
			wg.Add(1)
			go func(id string) {
				defer wg.Done()
				if _, err := h.Finish(ctx, frontier.Finish{Host: host, Lease: id, Started: time.Now()}); err != nil {
					t.Error(err)
				}
			}(m.ID)
		}
		wg.Wait()
	}
	if len(seen) != nHosts*perHost {
		t.Fatalf("%d requests handed out, want %d", len(seen), nHosts*perHost)
	}
	if n := rdb.ZCard(ctx, k.Leases).Val(); n != 0 {
		t.Fatalf("%d leases left, want 0", n)
	}
	if keys := rdb.Keys(ctx, k.HostStates+"*").Val(); len(keys) != 0 {
		t.Fatalf("%d host states left, want none (an idle host costs nothing): %v", len(keys), keys)
	}
	calls := evalshaCalls(t, srv) - before
	if calls >= nHosts*perHost/2 {
		t.Fatalf("%d script calls for %d finishes, want them shared (under half)", calls, nHosts*perHost)
	}
}
