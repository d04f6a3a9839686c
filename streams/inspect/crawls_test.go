package inspect_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestCrawlsInRedis: a crawl exists when its meta hash does; the list names each crawl
// once (a partitioned crawl's partitions are not crawls), and the error for a missing
// one lists them and writes nothing.
func TestCrawlsInRedis(t *testing.T) {
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	if err := inspect.RequireCrawl(ctx, rdb, "shop", srv.Addr); err == nil ||
		err.Error() != `no crawl "shop" in Redis at `+srv.Addr+` (it holds no crawl: a crawl exists once it is seeded or a stage has run with its spider)` {
		t.Errorf("an empty Redis: %v", err)
	}
	for _, crawl := range []string{"shop", "docs.v2"} {
		if _, _, err := streams.OpenLayout(ctx, rdb, crawl, 1); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := streams.OpenLayout(ctx, rdb, "big", 3); err != nil {
		t.Fatal(err)
	}
	for _, k := range streams.NewLayout("big", 3).Parts { // partitions' own meta hashes
		if err := rdb.HSet(ctx, k.Meta, "dedup", "{}").Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := rdb.HSet(ctx, "sc:{other}:stats", "x", 1).Err(); err != nil { // counters alone make no crawl
		t.Fatal(err)
	}
	got, err := inspect.ListCrawls(ctx, rdb)
	if want := []string{"big", "docs.v2", "shop"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("ListCrawls = %v, %v; want %v", got, err, want)
	}
	for _, crawl := range []string{"shop", "big"} {
		if err := inspect.RequireCrawl(ctx, rdb, crawl, srv.Addr); err != nil {
			t.Errorf("RequireCrawl(%s): %v", crawl, err)
		}
	}
	keys, _ := rdb.DBSize(ctx).Result()
	err = inspect.RequireCrawl(ctx, rdb, "shpo", srv.Addr)
	var nc *inspect.NoCrawlError
	want := `no crawl "shpo" in Redis at ` + srv.Addr + ` (crawls there: big, docs.v2, shop; check --crawl and --redis)`
	if !errors.As(err, &nc) || err.Error() != want {
		t.Errorf("RequireCrawl(shpo) (-want +got):\n-%s\n+%v", want, err)
	}
	if after, _ := rdb.DBSize(ctx).Result(); after != keys {
		t.Errorf("looking for a missing crawl changed the key count from %d to %d", keys, after)
	}
}

// TestBlockedHosts: a host is blocked when it has requests waiting and is neither
// ready nor scheduled, its slots taken (leases held); status counts those only.
func TestBlockedHosts(t *testing.T) {
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	l := streams.NewLayout("hosts", 1)
	k := l.Parts[0]
	for _, cmd := range [][]any{
		{"HSET", k.Meta, "partitions", 1},
		{"ZADD", k.Leases, 9e12, "blocked.example|1-0", 9e12, "blocked.example|1-1", 9e12, "idle.example|1-2",
			9e12, "ready.example|1-3", 9e12, "sched.example|1-4"},
		{"HSET", k.HostState("blocked.example"), "q0", 1, "f", 2},
		{"RPUSH", k.HostQueue("blocked.example", 0), "\x01/7"},
		{"HSET", k.HostState("ready.example"), "q0", 1},
		{"RPUSH", k.HostQueue("ready.example", 0), "\x01/8"},
		{"HSET", k.HostState("sched.example"), "q3", 1},
		{"RPUSH", k.HostQueue("sched.example", 3), "\x01/9"},
		{"HSET", k.HostState("idle.example"), "q0", 0, "f", 1},
		{"ZADD", k.Ready, 1, "ready.example"},
		{"ZADD", k.Sched, 9e12, "sched.example"},
	} {
		if err := rdb.Do(ctx, cmd...).Err(); err != nil {
			t.Fatal(cmd, err)
		}
	}
	st, err := inspect.ReadStatus(ctx, rdb, l)
	if err != nil {
		t.Fatal(err)
	}
	if err := inspect.ReadBlockedHosts(ctx, rdb, l, st); err != nil {
		t.Fatal(err)
	}
	if st.HostsBlocked != 1 || st.HostsReady != 1 || st.HostsScheduled != 1 {
		t.Errorf("hosts ready %d, scheduled %d, blocked %d; want 1 each (idle.example has nothing waiting)",
			st.HostsReady, st.HostsScheduled, st.HostsBlocked)
	}
}

// TestListCrawlsFindsTheCrawlsByTheirMetaHash: crawls with a meta hash are listed,
// sorted; other keys of a crawl and keys of other programs are not.
func TestListCrawlsFindsTheCrawlsByTheirMetaHash(t *testing.T) {
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	for _, name := range []string{"shop", "books"} {
		if err := rdb.HSet(ctx, streams.NewLayout(name, 1).Global.Meta, "v", 1).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{streams.NewLayout("news", 1).Global.Stats, "meta", "other:{x}:meta"} {
		if err := rdb.Set(ctx, k, 1, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	got, err := inspect.ListCrawls(ctx, rdb)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"books", "shop"}; !slices.Equal(got, want) {
		t.Fatalf("crawls %v, want %v", got, want)
	}
}
