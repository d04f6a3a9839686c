package frontier_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams/frontier"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// readAll reads up to n entries of the requests stream as the fetch group and returns
// them (stream ID and payload), acking nothing.
func readAll(t *testing.T, rdb redis.UniversalClient, k streams.Keys, n int64) []redis.XMessage {
	t.Helper()
	res, err := rdb.XReadGroup(context.Background(), &redis.XReadGroupArgs{Group: streams.StageFetch, Consumer: "f",
		Streams: []string{k.Requests, ">"}, Count: n, Block: -1}).Result()
	if err == redis.Nil {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return res[0].Messages
}

func TestAHostWithAHugeBacklogDoesNotStarveSmallHosts(t *testing.T) {
	rdb := streamstest.Start(t).Client()
	ctx := context.Background()
	k := streams.NewKeys("fair")
	if err := rdb.XGroupCreateMkStream(ctx, k.Requests, streams.StageFetch, "$").Err(); err != nil {
		t.Fatal(err)
	}
	f, _ := frontier.New(frontier.Config{Client: rdb, Layout: streams.NewLayout(k.Crawl, 1), SeenCache: -1})
	defer f.Close(context.Background())
	// The big host's 2,000 requests are found first, then 100 hosts with 10 each (the
	// 100,000-vs-10 case, scaled down). No host has a limit.
	var big []frontier.Candidate
	for i := range 2000 {
		c := cand(i, 0, 1)
		c.Host, c.Payload = "big.test", []byte(fmt.Sprintf("big-%d", i))
		big = append(big, c)
	}
	if _, err := enqueue(ctx, f, big); err != nil {
		t.Fatal(err)
	}
	var small []frontier.Candidate
	for h := range 100 {
		for i := range 10 {
			c := cand(10_000+h*10+i, 0, 1)
			c.Host, c.Payload = fmt.Sprintf("small%d.test", h), []byte(fmt.Sprintf("small-%d-%d", h, i))
			small = append(small, c)
		}
	}
	if _, err := enqueue(ctx, f, small); err != nil {
		t.Fatal(err)
	}
	d, _ := frontier.New(frontier.Config{Client: rdb, Layout: streams.NewLayout(k.Crawl, 1), Window: 50})
	bigBefore, smallOut, rounds := 0, 0, 0
	for smallOut < 1000 && rounds < 1000 {
		rounds++
		if _, err := d.Dispatch(ctx); err != nil {
			t.Fatal(err)
		}
		for _, m := range readAll(t, rdb, k, 50) {
			if strings.HasPrefix(m.Values["payload"].(string), "small-") {
				smallOut++
			} else if smallOut < 1000 {
				bigBefore++
			}
		}
	}
	if smallOut != 1000 {
		t.Fatalf("%d small-host requests handed out after %d rounds, want 1000", smallOut, rounds)
	}
	// Hosts of one band take turns, a big host at most DefaultHostQuantum per turn: the
	// small hosts' requests all go out within the first few turns.
	if bigBefore > 3*frontier.DefaultHostQuantum {
		t.Fatalf("%d of the big host's requests went out before the small hosts' last; want at most %d",
			bigBefore, 3*frontier.DefaultHostQuantum)
	}
	t.Logf("big host requests before the last small-host one: %d", bigBefore)
}

func TestOneHostKeyForEveryWayOfWritingIt(t *testing.T) {
	rdb := streamstest.Start(t).Client()
	ctx := context.Background()
	k := streams.NewKeys("norm")
	f, _ := frontier.New(frontier.Config{Client: rdb, Layout: streams.NewLayout(k.Crawl, 1), SeenCache: -1,
		Hosts: frontier.HostRule{Concurrency: 1}})
	defer f.Close(context.Background())
	var cs []frontier.Candidate
	// Hosts arrive as keys (spiders.HostKey of the URL): the ways of writing one host
	// make one key.
	for i, u := range []string{"http://Shop.Example:80/", "http://shop.example/", "https://SHOP.EXAMPLE:443/", "http://shop.example:8080/"} {
		c := hostCand(i, spiders.HostKey(u))
		cs = append(cs, c)
	}
	if _, err := enqueue(ctx, f, cs); err != nil {
		t.Fatal(err)
	}
	if n := rdb.LLen(ctx, k.HostQueue("shop.example", 0)).Val(); n != 3 {
		t.Fatalf("host queue of shop.example holds %d, want the 3 ways of writing it", n)
	}
	if n := rdb.LLen(ctx, k.HostQueue("shop.example:8080", 0)).Val(); n != 1 {
		t.Fatalf("host queue of shop.example:8080 holds %d, want 1 (another port is another host)", n)
	}
	d, _ := frontier.New(frontier.Config{Client: rdb, Layout: streams.NewLayout(k.Crawl, 1), Window: 10,
		Hosts: frontier.HostRule{Concurrency: 1}})
	if n, err := d.Dispatch(ctx); err != nil || n != 2 {
		t.Fatalf("dispatched %d, %v; want 2: one per host at concurrency 1", n, err)
	}
}

func TestALeaseOfADeadFetcherExpiresAndTheHostGetsItsSlotBack(t *testing.T) {
	rdb := streamstest.Start(t).Client()
	ctx := context.Background()
	k := streams.NewKeys("lease")
	if err := rdb.XGroupCreateMkStream(ctx, k.Requests, streams.StageFetch, "$").Err(); err != nil {
		t.Fatal(err)
	}
	hosts, ttl := frontier.HostRule{Concurrency: 1}, 300*time.Millisecond
	f, _ := frontier.New(frontier.Config{Client: rdb, Layout: streams.NewLayout(k.Crawl, 1), SeenCache: -1, Hosts: hosts, LeaseTTL: ttl, Window: 10, EmitHandsOut: true})
	defer f.Close(context.Background())
	if _, err := enqueue(ctx, f, []frontier.Candidate{hostCand(1, "h.test"), hostCand(2, "h.test"), hostCand(3, "h.test")}); err != nil {
		t.Fatal(err)
	}
	d, _ := frontier.New(frontier.Config{Client: rdb, Layout: streams.NewLayout(k.Crawl, 1), Window: 10, Hosts: hosts, LeaseTTL: ttl})
	first := readAll(t, rdb, k, 10)
	if len(first) != 1 {
		t.Fatalf("%d requests handed out at concurrency 1, want 1", len(first))
	}
	// The fetcher holding the slot dies: no Finish. Until the lease expires the host
	// gets nothing more.
	if n, _ := d.Dispatch(ctx); n != 0 {
		t.Fatalf("dispatched %d while the slot is leased, want 0", n)
	}
	time.Sleep(400 * time.Millisecond)
	if n, err := d.Dispatch(ctx); err != nil || n != 1 {
		t.Fatalf("after the lease expired dispatched %d, %v; want 1", n, err)
	}
	second := readAll(t, rdb, k, 10)
	if len(second) != 1 {
		t.Fatalf("read %d, want 1", len(second))
	}
	// The dead fetcher's request is still pending in the stream (XAUTOCLAIM gives it
	// to another fetcher): nothing was lost.
	if p := rdb.XPending(ctx, k.Requests, streams.StageFetch).Val(); p.Count != 2 {
		t.Fatalf("%d entries pending, want 2 (the dead fetcher's and the new one)", p.Count)
	}
	// Finishing the second gives its slot back at once: the third goes out.
	h, _ := frontier.New(frontier.Config{Client: rdb, Layout: streams.NewLayout("lease", 1), Hosts: hosts, LeaseTTL: ttl})
	defer h.Close(context.Background())
	if _, err := h.Finish(ctx, frontier.Finish{Host: "h.test", Lease: second[0].ID, Started: time.Now().Add(-10 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	if n, _ := d.Dispatch(ctx); n != 1 {
		t.Fatalf("after a finish dispatched %d, want 1", n)
	}
	third := readAll(t, rdb, k, 10)
	if len(third) != 1 {
		t.Fatalf("read %d, want 1", len(third))
	}
	if n := waiting(t, rdb, k); n != 0 {
		t.Fatalf("%d still waiting, want 0", n)
	}
	// A late finish of the expired lease gives back nothing: the third request keeps
	// the host's one slot.
	if _, err := h.Finish(ctx, frontier.Finish{Host: "h.test", Lease: first[0].ID, Started: time.Now().Add(-time.Second)}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id   string
		want bool
	}{{first[0].ID, false}, {second[0].ID, false}, {third[0].ID, true}} {
		if held, err := h.Leased(ctx, "h.test", c.id); err != nil || held != c.want {
			t.Fatalf("lease of %s held = %v (%v), want %v", c.id, held, err, c.want)
		}
	}
	if _, err := enqueue(ctx, f, []frontier.Candidate{hostCand(4, "h.test")}); err != nil {
		t.Fatal(err)
	}
	if n, _ := d.Dispatch(ctx); n != 0 {
		t.Fatalf("dispatched %d after a late finish of an expired lease, want 0: the slot is the third's", n)
	}
}

func TestASlowDownPushesTheHostBackForEveryFetcherAndRecovers(t *testing.T) {
	rdb := streamstest.Start(t).Client()
	ctx := context.Background()
	k := streams.NewKeys("slow")
	if err := rdb.XGroupCreateMkStream(ctx, k.Requests, streams.StageFetch, "$").Err(); err != nil {
		t.Fatal(err)
	}
	hosts := frontier.HostRule{Concurrency: 4}
	f, _ := frontier.New(frontier.Config{Client: rdb, Layout: streams.NewLayout(k.Crawl, 1), SeenCache: -1, Hosts: hosts})
	defer f.Close(context.Background())
	var cs []frontier.Candidate
	for i := range 10 {
		cs = append(cs, hostCand(i, "slow.test"), hostCand(100+i, "other.test"))
	}
	if _, err := enqueue(ctx, f, cs); err != nil {
		t.Fatal(err)
	}
	d, _ := frontier.New(frontier.Config{Client: rdb, Layout: streams.NewLayout(k.Crawl, 1), Window: 100, Hosts: hosts})
	if n, _ := d.Dispatch(ctx); n != 8 {
		t.Fatalf("dispatched %d, want 4 per host", n)
	}
	got := readAll(t, rdb, k, 100)
	h, _ := frontier.New(frontier.Config{Client: rdb, Layout: streams.NewLayout("slow", 1), Hosts: hosts})
	defer h.Close(context.Background())
	// slow.test's payloads are req-0 ... req-9, other.test's req-100 ... req-109.
	isSlow := func(m redis.XMessage) bool { return len(m.Values["payload"].(string)) == len("req-0") }
	var slowIDs []string
	// Every slot of both hosts comes back; the last answer of slow.test was a 429 with
	// Retry-After 1s.
	for _, m := range got {
		host := "other.test"
		if isSlow(m) {
			host = "slow.test"
			slowIDs = append(slowIDs, m.ID)
		}
		fin := frontier.Finish{Host: host, Lease: m.ID, Started: time.Now().Add(-5 * time.Millisecond)}
		if host == "slow.test" && len(slowIDs) == 4 {
			fin.SlowDown, fin.RetryAfter = true, time.Second
		}
		if _, err := h.Finish(ctx, fin); err != nil {
			t.Fatal(err)
		}
	}
	if len(slowIDs) != 4 {
		t.Fatalf("%d of slow.test's requests handed out, want 4", len(slowIDs))
	}
	if n, _ := d.Dispatch(ctx); n != 4 {
		t.Fatalf("dispatched %d right after the 429, want 4 (other.test's only)", n)
	}
	for _, m := range readAll(t, rdb, k, 100) {
		if isSlow(m) {
			t.Fatalf("slow.test got %s during its back-off", m.Values["payload"])
		}
	}
	at := rdb.ZScore(ctx, k.Sched, "slow.test").Val()
	if wait := time.Until(time.UnixMilli(int64(at))); wait < 800*time.Millisecond || wait > 1100*time.Millisecond {
		t.Fatalf("slow.test scheduled %s from now, want about its Retry-After of 1s", wait)
	}
	time.Sleep(time.Until(time.UnixMilli(int64(at))) + 50*time.Millisecond)
	if n, _ := d.Dispatch(ctx); n != 4 {
		t.Fatalf("after the back-off dispatched %d, want slow.test's next 4", n)
	}
	if lvl := rdb.HGet(ctx, k.Backoff, "slow.test").Val(); lvl != "1" {
		t.Fatalf("back-off level %q, want 1", lvl)
	}
	for _, m := range readAll(t, rdb, k, 100) {
		if _, err := h.Finish(ctx, frontier.Finish{Host: "slow.test", Lease: m.ID, Started: time.Now().Add(-time.Millisecond)}); err != nil {
			t.Fatal(err)
		}
	}
	if rdb.HExists(ctx, k.Backoff, "slow.test").Val() {
		t.Fatal("the back-off level stayed after successful answers; want it gone")
	}
}

// A host with a delay and a concurrency limit above 1 starts one request at a time, its
// delay after the previous one ended: a request handed out while another is in flight
// could reach the host closer than the delay (a fetcher sends what it was handed late
// under load), which a server measures as impolite.
func TestAHostWithADelayStartsItsNextRequestItsDelayAfterThePreviousEnded(t *testing.T) {
	rdb := streamstest.Start(t).Client()
	ctx := context.Background()
	k := streams.NewKeys("oneatatime")
	if err := rdb.XGroupCreateMkStream(ctx, k.Requests, streams.StageFetch, "$").Err(); err != nil {
		t.Fatal(err)
	}
	hosts, ttl, delay := frontier.HostRule{Concurrency: 4, Delay: 250 * time.Millisecond}, 800*time.Millisecond, 250*time.Millisecond
	f, _ := frontier.New(frontier.Config{Client: rdb, Layout: streams.NewLayout(k.Crawl, 1), SeenCache: -1, Hosts: hosts, LeaseTTL: ttl, Window: 10, EmitHandsOut: true})
	defer f.Close(context.Background())
	var cands []frontier.Candidate
	for i := range 4 {
		cands = append(cands, hostCand(i, "h.test"))
	}
	if _, err := enqueue(ctx, f, cands); err != nil {
		t.Fatal(err)
	}
	d, _ := frontier.New(frontier.Config{Client: rdb, Layout: streams.NewLayout(k.Crawl, 1), Window: 10, Hosts: hosts, LeaseTTL: ttl})
	defer d.Close(context.Background())
	first := readAll(t, rdb, k, 10)
	if len(first) != 1 {
		t.Fatalf("%d requests handed out at once to a host with a delay, want 1", len(first))
	}
	time.Sleep(delay + 50*time.Millisecond) // the delay after the first's start has passed
	if n, err := d.Dispatch(ctx); err != nil || n != 0 {
		t.Fatalf("dispatched %d (%v) while the host's request is in flight, want 0", n, err)
	}
	if _, err := d.Finish(ctx, frontier.Finish{Host: "h.test", Lease: first[0].ID, Started: time.Now().Add(-delay)}); err != nil {
		t.Fatal(err)
	}
	if n, err := d.Dispatch(ctx); err != nil || n != 0 {
		t.Fatalf("dispatched %d (%v) right after the request ended, want 0: its delay counts from the end", n, err)
	}
	time.Sleep(delay + 20*time.Millisecond)
	if n, err := d.Dispatch(ctx); err != nil || n != 1 {
		t.Fatalf("dispatched %d (%v) its delay after the end, want 1", n, err)
	}
	second := readAll(t, rdb, k, 10)
	if len(second) != 1 {
		t.Fatalf("read %d, want 1", len(second))
	}
	// The fetcher of the second dies (no finish): its lease expires and the host goes
	// on with the third.
	time.Sleep(ttl + 50*time.Millisecond)
	if n, err := d.Dispatch(ctx); err != nil || n != 1 {
		t.Fatalf("after the lease of a dead fetcher expired dispatched %d (%v), want 1", n, err)
	}
	if n := waiting(t, rdb, k); n != 1 {
		t.Fatalf("%d waiting, want 1 (the fourth)", n)
	}
}

// A robots.txt Crawl-delay recorded for a host is part of its rule for every fetcher:
// with a concurrency limit above 1 the host then starts one request at a time.
func TestCrawlDelayIsRecordedAndTakesTheHostOneAtATime(t *testing.T) {
	rdb := streamstest.Start(t).Client()
	ctx := context.Background()
	k := streams.NewKeys("crawldelay")
	if err := rdb.XGroupCreateMkStream(ctx, k.Requests, streams.StageFetch, "$").Err(); err != nil {
		t.Fatal(err)
	}
	hosts := frontier.HostRule{Concurrency: 4}
	f, _ := frontier.New(frontier.Config{Client: rdb, Layout: streams.NewLayout(k.Crawl, 1), SeenCache: -1, Hosts: hosts, LeaseTTL: time.Minute, Window: 10, EmitHandsOut: true})
	defer f.Close(context.Background())
	if err := f.SetCrawlDelay(ctx, "h.test", 300*time.Millisecond); err != nil {
		t.Fatalf("set crawl-delay: %v", err)
	}
	var cands []frontier.Candidate
	for i := range 3 {
		cands = append(cands, hostCand(i, "h.test"))
	}
	if _, err := enqueue(ctx, f, cands); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, rdb, k, 10); len(got) != 1 {
		t.Fatalf("%d requests handed out at once to a host with a Crawl-delay, want 1", len(got))
	}
}
