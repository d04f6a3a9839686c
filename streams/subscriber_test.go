package streams_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap/zaptest"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

func newSub(t *testing.T, rdb redis.UniversalClient, consumer string, mod func(*streams.SubscriberConfig)) *streams.Subscriber {
	t.Helper()
	cfg := streams.SubscriberConfig{Client: rdb, Group: "g", Consumer: consumer, DeadStream: "dead", Logger: zaptest.NewLogger(t)}
	if mod != nil {
		mod(&cfg)
	}
	s, err := streams.NewSubscriber(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func publishN(t *testing.T, rdb redis.UniversalClient, stream string, n int) {
	t.Helper()
	pub, err := streams.NewPublisher(rdb, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Shutdown(context.Background())
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- pub.Publish(stream, message.NewMessage(watermill.NewUUID(), []byte(fmt.Sprint(i))))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func pending(t *testing.T, rdb redis.UniversalClient, stream string) int64 {
	t.Helper()
	p, err := rdb.XPending(context.Background(), stream, "g").Result()
	if err != nil {
		t.Fatal(err)
	}
	return p.Count
}

func TestSubscriberAcksEverythingInBatches(t *testing.T) {
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	const n = 2000
	publishN(t, rdb, "s", n)
	sub := newSub(t, rdb, "c1", nil)
	ch, err := sub.Subscribe(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	before, _ := rdb.Info(ctx, "commandstats").Result()
	_ = before
	seen := map[string]bool{}
	for len(seen) < n {
		select {
		case m := <-ch:
			seen[string(m.Payload)] = true
			m.Ack()
		case <-time.After(10 * time.Second):
			t.Fatalf("got %d of %d messages", len(seen), n)
		}
	}
	if err := sub.Close(); err != nil {
		t.Fatal(err)
	}
	if got := pending(t, rdb, "s"); got != 0 {
		t.Fatalf("pending after close = %d, want 0", got)
	}
	if _, ok := <-ch; ok {
		t.Fatal("channel still open after Close")
	}
}

func TestSubscriberNackRedeliversThenDeadLetters(t *testing.T) {
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	publishN(t, rdb, "s", 1)
	sub := newSub(t, rdb, "c1", func(c *streams.SubscriberConfig) {
		c.MaxDeliveries = 3
		c.RetryBackoff = 10 * time.Millisecond
	})
	ch, err := sub.Subscribe(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	var deliveries []string
	deadline := time.After(10 * time.Second)
	for len(deliveries) < 3 {
		select {
		case m := <-ch:
			deliveries = append(deliveries, m.Metadata.Get(streams.MetaDeliveries))
			streams.Fail(m, errors.New("boom"), nil)
			m.Nack()
		case <-deadline:
			t.Fatalf("deliveries = %v", deliveries)
		}
	}
	// No fourth delivery: the entry goes to dead letters instead.
	select {
	case m := <-ch:
		t.Fatalf("unexpected delivery %d: %v", len(deliveries)+1, m.Metadata)
	case <-time.After(500 * time.Millisecond):
	}
	if want := "1 2 3"; fmt.Sprint(deliveries[0], " ", deliveries[1], " ", deliveries[2]) != want {
		t.Fatalf("delivery counts (-want +got): -%s +%v", want, deliveries)
	}
	dead, err := rdb.XRange(ctx, "dead", "-", "+").Result()
	if err != nil || len(dead) != 1 {
		t.Fatalf("dead letters = %v, %v; want 1", dead, err)
	}
	v := dead[0].Values
	if v[streams.DeadFieldError] != "boom" || v[streams.DeadFieldDeliveries] != "3" || v[streams.DeadFieldStage] != "g" || v["payload"] != "0" {
		t.Fatalf("dead letter fields = %v", v)
	}
	if got := pending(t, rdb, "s"); got != 0 {
		t.Fatalf("pending = %d, want 0", got)
	}
}

func TestSubscriberMalformedEntryGoesToDeadLettersAndReadingGoesOn(t *testing.T) {
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	rdb.XAdd(ctx, &redis.XAddArgs{Stream: "s", Values: map[string]any{"garbage": "x"}})
	rdb.XAdd(ctx, &redis.XAddArgs{Stream: "s", Values: map[string]any{"_watermill_message_uuid": "u", "metadata": "\xc1bad", "payload": "p"}})
	publishN(t, rdb, "s", 1)
	sub := newSub(t, rdb, "c1", nil)
	ch, _ := sub.Subscribe(ctx, "s")
	select {
	case m := <-ch:
		if string(m.Payload) != "0" {
			t.Fatalf("payload = %q", m.Payload)
		}
		m.Ack()
	case <-time.After(5 * time.Second):
		t.Fatal("the good entry behind two bad ones never came")
	}
	_ = sub.Close()
	if n, _ := rdb.XLen(ctx, "dead").Result(); n != 2 {
		t.Fatalf("dead letters = %d, want 2", n)
	}
	if got := pending(t, rdb, "s"); got != 0 {
		t.Fatalf("pending = %d, want 0", got)
	}
}

func TestSubscriberReclaimsEntriesOfADeadConsumer(t *testing.T) {
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	publishN(t, rdb, "s", 50)
	// A consumer that read everything and died without acking.
	if err := rdb.XGroupCreateMkStream(ctx, "s", "g", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "dead", Streams: []string{"s", ">"}, Count: 100}).Err(); err != nil {
		t.Fatal(err)
	}
	sub := newSub(t, rdb, "c2", func(c *streams.SubscriberConfig) {
		c.MinIdle = 300 * time.Millisecond
		c.ClaimInterval = 100 * time.Millisecond
	})
	ch, _ := sub.Subscribe(ctx, "s")
	got := map[string]bool{}
	for len(got) < 50 {
		select {
		case m := <-ch:
			if m.Metadata.Get(streams.MetaDeliveries) != "2" {
				t.Fatalf("deliveries = %q, want 2", m.Metadata.Get(streams.MetaDeliveries))
			}
			got[string(m.Payload)] = true
			m.Ack()
		case <-time.After(10 * time.Second):
			t.Fatalf("reclaimed %d of 50", len(got))
		}
	}
	_ = sub.Close()
	if p := pending(t, rdb, "s"); p != 0 {
		t.Fatalf("pending = %d, want 0", p)
	}
}

// An entry a consumer has acked but whose XACK has not gone out yet (it waits for the
// next read or the ack interval) may sit idle past MinIdle; the consumer's own reclaim
// takes it (XAUTOCLAIM does not skip its own entries) and must not hand it out again.
// The same holds for an entry still being handled whose heartbeat a stall delayed.
func TestSubscriberDoesNotRedoItsOwnEntriesWhenTheyGoIdle(t *testing.T) {
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	publishN(t, rdb, "s", 1)
	sub := newSub(t, rdb, "c1", func(c *streams.SubscriberConfig) {
		c.MinIdle = 300 * time.Millisecond
		c.ClaimInterval = 50 * time.Millisecond
		c.BlockTime = 2 * time.Second   // the next read, which would carry the ack, blocks
		c.AckInterval = 2 * time.Second // and the acker waits for company
	})
	ch, err := sub.Subscribe(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	m := <-ch
	time.Sleep(100 * time.Millisecond) // the reader is blocked in its next read
	m.Ack()
	// Wait until the reclaim has taken the entry (its delivery count goes to 2).
	deadline := time.Now().Add(10 * time.Second)
	for {
		p, err := rdb.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: "s", Group: "g", Start: "-", End: "+", Count: 1}).Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(p) == 1 && p[0].RetryCount >= 2 {
			break
		}
		if len(p) == 0 || time.Now().After(deadline) {
			t.Fatalf("the acked entry was not reclaimed while its ack waited (pending %v)", p)
		}
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case again := <-ch:
		t.Fatalf("entry %s handed out again after its ack (deliveries %s)", again.UUID, again.Metadata.Get(streams.MetaDeliveries))
	case <-time.After(300 * time.Millisecond):
	}
	if err := sub.Close(); err != nil {
		t.Fatal(err)
	}
	if p := pending(t, rdb, "s"); p != 0 {
		t.Fatalf("pending after close = %d, want 0 (the queued ack went out)", p)
	}
}

func TestSubscriberRereadsItsOwnPendingAfterRestart(t *testing.T) {
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	publishN(t, rdb, "s", 10)
	sub := newSub(t, rdb, "c1", func(c *streams.SubscriberConfig) { c.ShutdownTimeout = 100 * time.Millisecond })
	ch, _ := sub.Subscribe(ctx, "s")
	for i := 0; i < 10; i++ {
		<-ch // taken, never acked: the process "dies"
	}
	_ = sub.Close()
	if p := pending(t, rdb, "s"); p != 10 {
		t.Fatalf("pending = %d, want 10", p)
	}
	sub2 := newSub(t, rdb, "c1", nil)
	ch2, _ := sub2.Subscribe(ctx, "s")
	for i := 0; i < 10; i++ {
		select {
		case m := <-ch2:
			m.Ack()
		case <-time.After(5 * time.Second):
			t.Fatalf("re-read %d of 10 own pending entries", i)
		}
	}
	_ = sub2.Close()
	if p := pending(t, rdb, "s"); p != 0 {
		t.Fatalf("pending = %d, want 0", p)
	}
}

// Close right after Subscribe stops the subscription's read loop even when that loop
// had not started yet: once Close returns, the loop decides no further read (it never
// asks the Gate again; see TestSubscriberCloseDoesNotWaitForABlockedRead for a read
// already blocked in Redis).
func TestSubscriberCloseRightAfterSubscribeStopsTheReadLoop(t *testing.T) {
	rdb := streamstest.Start(t).Client()
	ctx := context.Background()
	for i := range 30 {
		var closed, readAfterClose atomic.Bool
		sub := newSub(t, rdb, "c1", func(c *streams.SubscriberConfig) {
			c.Gate = func() bool { // asked before every read of new entries
				if closed.Load() {
					readAfterClose.Store(true)
				}
				return true
			}
		})
		ch, err := sub.Subscribe(ctx, "s")
		if err != nil {
			t.Fatal(err)
		}
		if err := sub.Close(); err != nil {
			t.Fatal(err)
		}
		closed.Store(true)
		if _, ok := <-ch; ok {
			t.Fatal("a message came out of a subscription closed before anything was published")
		}
		time.Sleep(5 * time.Millisecond) // a read loop that outlived Close would ask the gate by now
		if readAfterClose.Load() {
			t.Fatalf("round %d: the read loop asked to read after Close returned", i)
		}
	}
}

// A stop because nothing more comes (streams.ErrNothingMore: a done crawl) does not wait
// out a read blocked in Redis on an idle stream (BlockTime, 2 s by default: every
// crawl's end waited for it), and loses nothing by it: an entry that read returns after
// Close stays pending for the consumer, which gets it when it subscribes again.
func TestSubscriberCloseDoesNotWaitForABlockedRead(t *testing.T) {
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	blocked := func() int64 { return blockedClients(t, rdb) }
	sub := newSub(t, rdb, "c1", func(c *streams.SubscriberConfig) { c.BlockTime = time.Minute })
	// Stopped because nothing more comes (a done crawl): a stop mid-crawl would wait
	// for the read, up to the shutdown timeout (TestSubscriberStopMidCrawlHandsOutItsLastRead).
	sctx, stop := context.WithCancelCause(ctx)
	ch, err := sub.Subscribe(sctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); blocked() != 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("blocked clients = %d, want the subscriber's read", blocked())
		}
	}
	stop(streams.ErrNothingMore)
	if err := sub.Close(); err != nil {
		t.Fatal(err)
	}
	if n := blocked(); n != 1 {
		t.Fatalf("blocked clients right after Close = %d, want 1: Close waited for the blocked read", n)
	}
	if _, ok := <-ch; ok {
		t.Fatal("a message came out of a closed subscription")
	}
	publishN(t, rdb, "s", 1) // the blocked read returns it, after Close: not handed out
	for deadline := time.Now().Add(10 * time.Second); pending(t, rdb, "s") != 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("pending = %d, want the entry the blocked read took", pending(t, rdb, "s"))
		}
	}
	sub2 := newSub(t, rdb, "c1", nil)
	ch2, err := sub2.Subscribe(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-ch2:
		m.Ack()
	case <-time.After(10 * time.Second):
		t.Fatal("the entry read after Close never came back to its consumer")
	}
	_ = sub2.Close()
	if p := pending(t, rdb, "s"); p != 0 {
		t.Fatalf("pending = %d after the ack, want 0", p)
	}
}

// A stop mid-crawl waits for the read blocked in Redis and hands out what it returns, as
// in-flight work: a graceful stop leaves nothing pending (the other stages' last output
// arrives then).
func TestSubscriberStopMidCrawlHandsOutItsLastRead(t *testing.T) {
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	sub := newSub(t, rdb, "c1", func(c *streams.SubscriberConfig) {
		c.BlockTime, c.ShutdownTimeout = time.Minute, time.Minute
	})
	ch, err := sub.Subscribe(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); blockedClients(t, rdb) != 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("blocked clients = %d, want the subscriber's read", blockedClients(t, rdb))
		}
	}
	closed := make(chan error, 1)
	go func() { closed <- sub.Close() }()
	publishN(t, rdb, "s", 1) // the blocked read returns it while Close waits
	select {
	case m, ok := <-ch:
		if !ok {
			t.Fatal("the output closed before the last read's entry was handed out")
		}
		m.Ack()
	case <-time.After(30 * time.Second):
		t.Fatal("the entry the last read returned was never handed out")
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if p := pending(t, rdb, "s"); p != 0 {
		t.Fatalf("pending = %d after a graceful stop, want 0", p)
	}
}

// blockedClients is the server's count of clients blocked in a command.
func blockedClients(t *testing.T, rdb redis.UniversalClient) int64 {
	t.Helper()
	info, err := rdb.Info(context.Background(), "clients").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "blocked_clients:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}
