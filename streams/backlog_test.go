package streams_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// A Backlog sums its group's pending and unread entries over every partition's stream,
// in one pipelined look; a stream without the group counts nothing, and a look that
// fails says so.
func TestBacklogSumsPendingAndUnreadOverPartitions(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	streamsOf := []string{"p0", "p1", "p2", "p3"}
	for i, s := range streamsOf[:3] {
		for j := 0; j < 5; j++ {
			if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: s, Values: map[string]any{"j": j}}).Err(); err != nil {
				t.Fatal(err)
			}
		}
		if err := rdb.XGroupCreate(ctx, s, "parse", "0").Err(); err != nil {
			t.Fatal(err)
		}
		// Partition i: i+1 read (pending), one of them acked.
		res, err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "parse", Consumer: "c", Streams: []string{s, ">"}, Count: int64(i + 1)}).Result()
		if err != nil {
			t.Fatal(err)
		}
		rdb.XAck(ctx, s, "parse", res[0].Messages[0].ID)
	}
	// p3 exists without the group.
	rdb.XAdd(ctx, &redis.XAddArgs{Stream: "p3", Values: map[string]any{"j": 0}})
	b := &streams.Backlog{Client: rdb, Streams: streamsOf, Group: "parse", Max: 100}
	// Each partition: 5 entries, one acked: 4 unfinished.
	if n, ok := b.Look(ctx); !ok || n != 12 {
		t.Fatalf("backlog %d (ok %v), want 12 (4 unfinished in each of 3 partitions)", n, ok)
	}
	srv.Kill()
	if n, ok := b.Look(ctx); ok {
		t.Fatalf("a look at a dead server gave %d, want it to say it cannot tell", n)
	}
}
