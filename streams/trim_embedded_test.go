package streams_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
)

// TestTrimOnTheEmbeddedRedis: the embedded Redis (single-machine mode) keeps a group
// created at "0" with the last-delivered ID "0", not "0-0" as a real server says. The
// trim script must read it as the start of the stream: it used to fail with "attempt
// to perform arithmetic on a nil value" and trim nothing while such a group had read
// nothing.
func TestTrimOnTheEmbeddedRedis(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, err := streams.Connect(ctx, streams.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := 0; i < 10; i++ {
		if err := c.XAdd(ctx, &redis.XAddArgs{Stream: "s", Values: map[string]any{"i": i}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, g := range []string{"idle", "reader"} {
		if err := c.XGroupCreate(ctx, "s", g, "0").Err(); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := streams.Trim(ctx, c, "s", spiders.StreamRetention{}, time.Now())
	if err != nil {
		t.Fatalf("trim with a group that read nothing: %v", err)
	}
	if removed != 0 {
		t.Fatalf("trim removed %d entries no group has read, want 0", removed)
	}
	res, err := c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "reader", Consumer: "c", Streams: []string{"s", ">"}, Count: 4}).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range res[0].Messages {
		if err := c.XAck(ctx, "s", "reader", m.ID).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.XGroupDestroy(ctx, "s", "idle").Err(); err != nil {
		t.Fatal(err)
	}
	removed, err = streams.Trim(ctx, c, "s", spiders.StreamRetention{}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if n := c.XLen(ctx, "s").Val(); removed != 4 || n != 6 {
		t.Fatalf("after 4 acked by the only group: removed %d, %d left; want 4 and 6", removed, n)
	}
}
