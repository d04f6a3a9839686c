package streams_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestZombieConsumerLosesItsEntries cuts consumer a off from Redis (a partition through
// a fault proxy) while its handlers hold 5 entries, lets consumer b take them over, then
// heals the network: a's heartbeat must not take them back from b (an XCLAIM with
// min-idle 0 would), and every one of a's handlers, woken, must learn that its entry is
// no longer its own (streams.Held), so that it neither acts nor acks.
func TestZombieConsumerLosesItsEntries(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	direct := srv.Client()
	fp := streamstest.StartFaultProxy(t, srv.Addr)
	viaProxy := redis.NewClient(&redis.Options{Addr: fp.Addr, MaxRetries: -1, ReadTimeout: time.Second, WriteTimeout: time.Second})
	t.Cleanup(func() { viaProxy.Close() })
	ctx := context.Background()
	const n = 5
	publishN(t, direct, "s", n)
	fast := func(c *streams.SubscriberConfig) {
		c.MinIdle, c.ClaimInterval, c.ShutdownTimeout = time.Second, 100*time.Millisecond, 2*time.Second
	}

	a := newSub(t, viaProxy, "a", fast)
	fromA, err := a.Subscribe(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	wake := make(chan struct{})
	verdicts := make(chan error, n)
	var handlers sync.WaitGroup
	for i := 0; i < n; i++ {
		msg := <-fromA
		handlers.Add(1)
		go func(msg *message.Message) {
			defer handlers.Done()
			<-wake
			err := streams.Held(msg.Context())
			verdicts <- err
			if err == nil {
				msg.Ack()
			} else {
				msg.Nack()
			}
		}(msg)
	}
	if got := consumerPending(t, direct, "a"); got != n {
		t.Fatalf("a holds %d entries, want %d", got, n)
	}

	if err := fp.Partition(); err != nil {
		t.Fatal(err)
	}
	b := newSub(t, direct, "b", fast)
	fromB, err := b.Subscribe(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	var taken []*message.Message
	for len(taken) < n {
		select {
		case msg := <-fromB:
			taken = append(taken, msg)
		case <-time.After(30 * time.Second):
			t.Fatalf("b took over %d of a's %d entries in 30s", len(taken), n)
		}
	}

	if err := fp.Heal(); err != nil {
		t.Fatal(err)
	}
	// a's claimer runs every 100ms: give its heartbeat several rounds to (wrongly) claim
	// the entries back.
	time.Sleep(time.Second)
	if got := consumerPending(t, direct, "b"); got != n {
		t.Errorf("after the partition healed b holds %d entries, want %d (a's heartbeat took them back?)", got, n)
	}

	close(wake)
	handlers.Wait()
	close(verdicts)
	for err := range verdicts {
		if !errors.Is(err, streams.ErrNotHeld) {
			t.Errorf("a's handler woke and got %v from Held, want ErrNotHeld", err)
		}
	}
	for _, msg := range taken {
		if err := streams.Held(msg.Context()); err != nil {
			t.Errorf("b's hold: %v", err)
		}
		msg.Ack()
	}
	deadline := time.Now().Add(10 * time.Second)
	for pending(t, direct, "s") != 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if p := pending(t, direct, "s"); p != 0 {
		t.Errorf("%d entries pending after b acked them all", p)
	}
	select {
	case msg := <-fromA:
		t.Errorf("a was handed entry %s again", msg.Metadata.Get(streams.MetaStreamID))
	default:
	}
}

// TestHeldWithinItsWindowAsksNothing checks that a handler's Held is answered from the
// clock while its entry was delivered less than three quarters of min-idle ago: it
// holds with Redis unreachable.
func TestHeldWithinItsWindowAsksNothing(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	fp := streamstest.StartFaultProxy(t, srv.Addr)
	viaProxy := redis.NewClient(&redis.Options{Addr: fp.Addr, MaxRetries: -1, ReadTimeout: time.Second})
	t.Cleanup(func() { viaProxy.Close() })
	publishN(t, srv.Client(), "s", 1)
	sub := newSub(t, viaProxy, "a", func(c *streams.SubscriberConfig) { c.MinIdle, c.ShutdownTimeout = time.Minute, time.Second })
	ch, err := sub.Subscribe(context.Background(), "s")
	if err != nil {
		t.Fatal(err)
	}
	msg := <-ch
	if err := fp.Partition(); err != nil {
		t.Fatal(err)
	}
	if err := streams.Held(msg.Context()); err != nil {
		t.Errorf("Held of an entry delivered just now, Redis unreachable: %v", err)
	}
	if got := streams.Holder(msg.Context()); got != "a" {
		t.Errorf("Holder = %q, want a", got)
	}
	if err := streams.Held(context.Background()); err != nil {
		t.Errorf("Held of a context from no subscriber: %v", err)
	}
	_ = fp.Heal()
	msg.Ack()
}

// consumerPending returns how many entries of stream s consumer holds in group g.
func consumerPending(t *testing.T, rdb redis.UniversalClient, consumer string) int64 {
	t.Helper()
	p, err := rdb.XPending(context.Background(), "s", "g").Result()
	if err != nil {
		t.Fatal(err)
	}
	return p.Consumers[consumer]
}

// TestEntriesOfALostReadReplyAreHandledWithoutWaitingForMinIdle cuts the replies of a
// consumer's Redis connection (a reset after a few bytes) while entries arrive: reads
// whose replies were lost delivered entries in Redis that the consumer never saw. They
// must be handled well before min-idle (a minute here: no reclaim can explain it), each
// once.
func TestEntriesOfALostReadReplyAreHandledWithoutWaitingForMinIdle(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	direct := srv.Client()
	fp := streamstest.StartFaultProxy(t, srv.Addr)
	viaProxy := redis.NewClient(&redis.Options{Addr: fp.Addr, MaxRetries: -1, ReadTimeout: time.Second})
	t.Cleanup(func() { viaProxy.Close() })
	sub := newSub(t, viaProxy, "a", func(c *streams.SubscriberConfig) {
		c.MinIdle, c.ClaimInterval, c.ShutdownTimeout = time.Minute, 200*time.Millisecond, time.Second
	})
	ch, err := sub.Subscribe(context.Background(), "s")
	if err != nil {
		t.Fatal(err)
	}
	if err := fp.ResetAfter(64); err != nil {
		t.Fatal(err)
	}
	const n = 20
	publishN(t, direct, "s", n)
	time.Sleep(500 * time.Millisecond) // reads fail meanwhile, some after Redis delivered
	lostReplies := consumerPending(t, direct, "a")
	if err := fp.Heal(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	deadline := time.After(20 * time.Second)
	for len(seen) < n {
		select {
		case msg := <-ch:
			seen[string(msg.Payload)]++
			msg.Ack()
		case <-deadline:
			t.Fatalf("%d of %d entries handled 20s after the replies were cut (%d were delivered to a's lost replies), min-idle 1m",
				len(seen), n, lostReplies)
		}
	}
	for p, c := range seen {
		if c != 1 {
			t.Errorf("entry %s handled %d times", p, c)
		}
	}
	t.Logf("%d entries were delivered to replies a never read", lostReplies)
}

// TestHeartbeatRenewsEveryEntryInHand holds 6 entries in slow handlers for three times
// min-idle while another consumer reclaims every 100ms: the heartbeat must renew all of
// them (a renewal that kept only the first would let the other take 5 over) and every
// handler must still hold its entry at the end.
func TestHeartbeatRenewsEveryEntryInHand(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	rdb := srv.Client()
	const n = 6
	publishN(t, rdb, "s", n)
	cfg := func(c *streams.SubscriberConfig) {
		c.MinIdle, c.ClaimInterval, c.ShutdownTimeout = 1500*time.Millisecond, 100*time.Millisecond, 2*time.Second
	}
	a := newSub(t, rdb, "a", cfg)
	ch, err := a.Subscribe(context.Background(), "s")
	if err != nil {
		t.Fatal(err)
	}
	var held []*message.Message
	for len(held) < n {
		held = append(held, <-ch)
	}
	b := newSub(t, rdb, "b", cfg)
	fromB, err := b.Subscribe(context.Background(), "s")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case msg := <-fromB:
		t.Errorf("b took entry %s over from a live consumer", msg.Metadata.Get(streams.MetaStreamID))
	case <-time.After(4500 * time.Millisecond):
	}
	if got := consumerPending(t, rdb, "a"); got != n {
		t.Errorf("a holds %d entries after 3x min-idle in its handlers, want %d", got, n)
	}
	for _, msg := range held {
		if err := streams.Held(msg.Context()); err != nil {
			t.Errorf("a's handler lost its entry: %v", err)
		}
		msg.Ack()
	}
}
