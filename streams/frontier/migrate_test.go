package frontier_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/frontier"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

func TestAFrontierFromBeforeHostQueuesIsMigratedWithNothingLost(t *testing.T) {
	rdb := streamstest.Start(t).Client()
	ctx := context.Background()
	k := streams.NewKeys("legacy")
	// As the version before host queues left it: band × 1e9 + sequence.
	legacy := []redis.Z{
		{Score: 0*1e9 + 1, Member: "a.test|first"},
		{Score: -10*1e9 + 2, Member: "b.test|priority"},
		{Score: 0*1e9 + 3, Member: "a.test|second"},
		{Score: 0*1e9 + 4, Member: "not a request"},
	}
	if err := rdb.ZAdd(ctx, k.LegacyFrontier, legacy...).Err(); err != nil {
		t.Fatal(err)
	}
	hostOf := func(p []byte) (string, error) {
		h, _, ok := strings.Cut(string(p), "|")
		if !ok {
			return "", errors.New("no host")
		}
		return h, nil
	}
	l := streams.NewLayout("legacy", 1)
	n, err := frontier.Migrate(ctx, frontier.Config{Client: rdb, Layout: l}, hostOf)
	if err != nil || n != 3 {
		t.Fatalf("migrated %d, %v; want 3", n, err)
	}
	if rdb.Exists(ctx, k.LegacyFrontier).Val() != 0 {
		t.Fatal("the legacy frontier is still there")
	}
	if n := waiting(t, rdb, k); n != 3 {
		t.Fatalf("%d waiting, want 3", n)
	}
	dead := rdb.XRange(ctx, k.Dead, "-", "+").Val()
	if len(dead) != 1 || dead[0].Values["payload"] != "not a request" {
		t.Fatalf("dead letters %v, want the unreadable entry", dead)
	}
	if n, err := frontier.Migrate(ctx, frontier.Config{Client: rdb, Layout: l}, hostOf); err != nil || n != 0 {
		t.Fatalf("second migration moved %d, %v; want 0", n, err)
	}
	d, _ := frontier.New(frontier.Config{Client: rdb, Layout: streams.NewLayout(k.Crawl, 1), Window: 10})
	if n, err := d.Dispatch(ctx); err != nil || n != 3 {
		t.Fatalf("dispatched %d, %v; want 3", n, err)
	}
	if got := fmt.Sprint(streamPayloads(t, rdb, k)); got != "[b.test|priority a.test|first a.test|second]" {
		t.Fatalf("stream = %s, want the priority request first, then a.test's in order", got)
	}
}
