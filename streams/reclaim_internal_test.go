package streams

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// A consumer that took an entry between the sweep's look (nothing pending) and its
// script is kept by the script; the sweep must then neither delete it nor log that it
// did.
func TestSweepKeepsAndDoesNotReportAConsumerThatHoldsEntries(t *testing.T) {
	rdb := streamstest.Start(t).Client()
	ctx := context.Background()
	if err := rdb.XGroupCreateMkStream(ctx, "s", "g", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: "s", Values: []any{"f", "v"}}).Err(); err != nil {
		t.Fatal(err)
	}
	// "busy" takes the entry: it now holds one pending.
	if err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "busy", Streams: []string{"s", ">"}}).Err(); err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zap.InfoLevel)
	cfg := SubscriberConfig{Client: rdb, Group: "g", Consumer: "me", DeadStream: "dead"}
	cfg.setDefaults()
	s := newSubscription(ctx, cfg, "s", make(chan struct{}, 1), zap.New(core))
	defer s.acks.close()

	s.removeIdleConsumer(ctx, "busy", time.Hour) // as if the look had seen it idle and empty

	cons, err := rdb.XInfoConsumers(ctx, "s", "g").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(cons) != 1 || cons[0].Name != "busy" || cons[0].Pending != 1 {
		t.Fatalf("consumers after the sweep = %+v, want busy holding 1", cons)
	}
	if n := logs.FilterMessage("removed idle consumer").Len(); n != 0 {
		t.Fatalf("%d lines say the consumer holding an entry was removed, want 0", n)
	}
}
