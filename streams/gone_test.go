package streams_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestStopIsNotHeldByAGroupThatIsGone: entries in hand when the crawl's state is deleted
// (FLUSHALL) are then dead-lettered (poison) or acked: Redis answers NOGROUP to both,
// and no retry can bring the group back. The stop must not wait for them until the
// shutdown deadline (a worker of a flushed crawl took its whole shutdown timeout to
// exit), and nothing may be written back: the streams stay gone.
func TestStopIsNotHeldByAGroupThatIsGone(t *testing.T) {
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	publishN(t, rdb, "s", 4)
	const shutdown = time.Minute
	sub := newSub(t, rdb, "c1", func(c *streams.SubscriberConfig) { c.ShutdownTimeout = shutdown })
	ch, err := sub.Subscribe(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	var held []*message.Message
	for len(held) < 4 {
		select {
		case msg := <-ch:
			held = append(held, msg)
		case <-time.After(10 * time.Second):
			t.Fatalf("only %d of 4 entries handed out", len(held))
		}
	}
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	for i, msg := range held {
		if i%2 == 0 {
			streams.Fail(msg, fmt.Errorf("%w: test", streams.ErrPoison), nil)
			msg.Nack()
		} else {
			msg.Ack()
		}
	}
	start := time.Now()
	closeErr := sub.Close()
	// Half the shutdown deadline: a stop held by retries takes all of it.
	if took := time.Since(start); took > shutdown/2 {
		t.Errorf("Close took %s after the group was gone (shutdown timeout %s): retries of what cannot land held it", took, shutdown)
	}
	t.Logf("Close: %v", closeErr)
	for _, key := range []string{"s", "dead"} {
		if n, err := rdb.Exists(ctx, key).Result(); err != nil || n != 0 {
			t.Errorf("%s exists again after FLUSHALL (%d, %v)", key, n, err)
		}
	}
}
