package frontier_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// calls returns how many times Redis ran cmd since its stats were last reset.
func calls(t *testing.T, rdb *redis.Client, cmd string) int {
	t.Helper()
	raw, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(raw, "\n") {
		if rest, ok := strings.CutPrefix(line, "cmdstat_"+cmd+":calls="); ok {
			n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
			return n
		}
	}
	return 0
}

// TestAHostOfConcurrencyOneTakesTurnsWithoutReadingItsState: once a host of
// concurrency 1 has had a turn, its next turns (made ready when its time comes, handed
// out) read no host state: its band is in its ready score and kept in the partition's
// ready bands. A request of a better band found while it waits goes out first, and
// once its queue is empty the host is retired with nothing left behind.
func TestAHostOfConcurrencyOneTakesTurnsWithoutReadingItsState(t *testing.T) {
	rdb := streamstest.Start(t).Client()
	ctx := context.Background()
	k := streams.NewKeys("turns")
	if err := rdb.XGroupCreateMkStream(ctx, k.Requests, streams.StageFetch, "$").Err(); err != nil {
		t.Fatal(err)
	}
	cfg := frontier.Config{Client: rdb, Layout: streams.NewLayout(k.Crawl, 1), SeenCache: -1,
		Hosts: frontier.HostRule{Concurrency: 1}, Window: 10}
	f, err := frontier.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close(context.Background())
	var cands []frontier.Candidate
	for i := range 6 {
		cands = append(cands, hostCand(i, "h.test"))
	}
	if _, err := enqueue(ctx, f, cands); err != nil {
		t.Fatal(err)
	}
	var got []string
	turn := func() {
		t.Helper()
		if _, err := f.Dispatch(ctx); err != nil {
			t.Fatal(err)
		}
		msgs := readAll(t, rdb, k, 10)
		if len(msgs) != 1 {
			t.Fatalf("turn %d: %d requests handed out at concurrency 1, want 1", len(got)+1, len(msgs))
		}
		got = append(got, msgs[0].Values["payload"].(string))
		if _, err := f.Finish(ctx, frontier.Finish{Host: "h.test", Lease: msgs[0].ID, Started: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	turn() // the first: its state is read
	if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	turn()
	turn()
	turn()
	if n := calls(t, rdb, "hgetall"); n != 0 {
		t.Fatalf("%d host state reads in 3 turns of a host of concurrency 1, want 0", n)
	}
	hi := hostCand(100, "h.test")
	hi.Priority = 5
	if _, err := enqueue(ctx, f, []frontier.Candidate{hi}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		turn()
	}
	want := []string{"req-0", "req-1", "req-2", "req-3", "req-100", "req-4", "req-5"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("handed out %v, want %v", got, want)
	}
	if _, err := f.Dispatch(ctx); err != nil { // finds the queue empty: retired
		t.Fatal(err)
	}
	if n := rdb.Exists(ctx, k.HostState("h.test"), k.ReadyBands).Val(); n != 0 {
		t.Fatalf("%d of the host's state hash and the ready bands left, want none", n)
	}
	if n := waiting(t, rdb, k); n != 0 {
		t.Fatalf("%d waiting, want 0", n)
	}
}
