package streamstest_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestFaultProxy puts a fault proxy between a client and a real redis-server: latency
// lengthens each round trip, a partition leaves a command unanswered until its timeout,
// Heal lets commands through again, a reset cuts a reply longer than its limit.
func TestFaultProxy(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	fp := streamstest.StartFaultProxy(t, srv.Addr)
	rdb := redis.NewClient(&redis.Options{Addr: fp.Addr, MaxRetries: -1, ReadTimeout: 500 * time.Millisecond})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET through the proxy: %v", err)
	}

	if err := fp.Latency(50*time.Millisecond, 0); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING with latency: %v", err)
	}
	if took := time.Since(began); took < 50*time.Millisecond {
		t.Errorf("PING took %s with 50ms latency added", took)
	}

	if err := fp.Partition(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Ping(ctx).Err(); err == nil {
		t.Fatal("PING answered through a partition")
	}
	if err := fp.Heal(); err != nil {
		t.Fatal(err)
	}
	if got, err := rdb.Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Fatalf("GET after Heal: %q, %v", got, err)
	}

	if err := rdb.Set(ctx, "big", string(make([]byte, 64<<10)), 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := fp.ResetAfter(1024); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Get(ctx, "big").Err(); err == nil {
		t.Fatal("a 64 KB reply came whole through a proxy that resets after 1 KB")
	}
}

// TestFaultProxyLatencyMicroseconds adds round trips of less than a millisecond, which a
// latency counted in whole milliseconds would round to none: every PING takes at least
// what was added, each way or on the replies.
func TestFaultProxyLatencyMicroseconds(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	fp := streamstest.StartFaultProxy(t, srv.Addr)
	rdb := redis.NewClient(&redis.Options{Addr: fp.Addr, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	fastest := func() time.Duration {
		t.Helper()
		least := time.Hour
		for range 20 {
			began := time.Now()
			if err := rdb.Ping(ctx).Err(); err != nil {
				t.Fatalf("PING through the proxy: %v", err)
			}
			least = min(least, time.Since(began))
		}
		return least
	}
	fastest() // connects

	if err := fp.Latency(500*time.Microsecond, 0); err != nil {
		t.Fatal(err)
	}
	if got := fastest(); got < 500*time.Microsecond {
		t.Errorf("fastest of 20 PINGs took %s with 500µs added to the replies", got)
	}
	if err := fp.Heal(); err != nil {
		t.Fatal(err)
	}
	if err := fp.LatencyEachWay(300 * time.Microsecond); err != nil {
		t.Fatal(err)
	}
	if got := fastest(); got < 600*time.Microsecond {
		t.Errorf("fastest of 20 PINGs took %s with 300µs added each way", got)
	}
}
