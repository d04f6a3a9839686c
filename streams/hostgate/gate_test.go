package hostgate_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/hostgate"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// newGate returns a gate on a fresh redis-server.
func newGate(t *testing.T, cfg hostgate.Config) (*hostgate.Gate, redis.UniversalClient) {
	t.Helper()
	rdb := streamstest.Start(t).Client()
	g, err := hostgate.New(rdb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g, rdb
}

// acquire is Acquire that fails the test on an error.
func acquire(t *testing.T, g *hostgate.Gate, host string, r hostgate.Rule, token string, lease time.Duration) time.Duration {
	t.Helper()
	wait, err := g.Acquire(t.Context(), host, r, token, lease)
	if err != nil {
		t.Fatal(err)
	}
	return wait
}

func release(t *testing.T, g *hostgate.Gate, host, token string) {
	t.Helper()
	if err := g.Release(t.Context(), host, token, 0); err != nil {
		t.Fatal(err)
	}
}

// TestGateOneAtATimeEachDelayAfterTheLastEnd: a host with a delay and a limit has one
// request in flight, and the next starts its delay after the previous one ended.
func TestGateOneAtATimeEachDelayAfterTheLastEnd(t *testing.T) {
	g, _ := newGate(t, hostgate.Config{})
	r := hostgate.Rule{Delay: 500 * time.Millisecond, Concurrency: 4}
	if w := acquire(t, g, "a.example", r, "1", time.Minute); w != 0 {
		t.Fatalf("first ask waits %s, want granted", w)
	}
	if w := acquire(t, g, "a.example", r, "2", time.Minute); w <= 0 || w > r.Delay {
		t.Fatalf("ask while the host's one slot is taken: wait %s, want in (0, %s]", w, r.Delay)
	}
	if w := acquire(t, g, "b.example", r, "2", time.Minute); w != 0 {
		t.Fatalf("another host waits %s, want granted", w)
	}
	time.Sleep(700 * time.Millisecond) // past the delay from the start: only the end counts
	release(t, g, "a.example", "1")
	if w := acquire(t, g, "a.example", r, "2", time.Minute); w < 300*time.Millisecond || w > 500*time.Millisecond {
		t.Fatalf("ask right after the release: wait %s, want about the delay (300ms-500ms)", w)
	}
}

// TestGateConcurrencyWithoutDelay: without a delay, the limit is how many hold a slot.
func TestGateConcurrencyWithoutDelay(t *testing.T) {
	g, _ := newGate(t, hostgate.Config{})
	r := hostgate.Rule{Concurrency: 2}
	for _, tok := range []string{"1", "2"} {
		if w := acquire(t, g, "h", r, tok, time.Minute); w != 0 {
			t.Fatalf("ask %s waits %s, want granted", tok, w)
		}
	}
	if w := acquire(t, g, "h", r, "3", time.Minute); w == 0 {
		t.Fatal("a third request was granted at a host of concurrency 2")
	}
	release(t, g, "h", "1")
	if w := acquire(t, g, "h", r, "3", time.Minute); w != 0 {
		t.Fatalf("ask after a release waits %s, want granted", w)
	}
}

// TestGateStricterRuleWins: of two crawls' rules, the larger delay and the smaller
// limit hold; a rule nobody asks with any more stops holding after Keep.
func TestGateStricterRuleWins(t *testing.T) {
	const keep = 2 * time.Second
	g, _ := newGate(t, hostgate.Config{Keep: keep})
	a := hostgate.Rule{Delay: 100 * time.Millisecond, Concurrency: 1}
	b := hostgate.Rule{Delay: 800 * time.Millisecond, Concurrency: 1}
	if w := acquire(t, g, "h", b, "b1", time.Minute); w != 0 {
		t.Fatalf("b's ask waits %s, want granted", w)
	}
	release(t, g, "h", "b1")
	if w := acquire(t, g, "h", a, "a1", time.Minute); w < 500*time.Millisecond {
		t.Fatalf("a's ask after b's request waits %s, want b's delay (about 800ms), not a's 100ms", w)
	}
	// Unlimited concurrency asked by one crawl does not lift another's limit.
	free := hostgate.Rule{}
	time.Sleep(900 * time.Millisecond)
	if w := acquire(t, g, "h", free, "f1", time.Minute); w != 0 {
		t.Fatalf("ask after the delay waits %s, want granted", w)
	}
	if w := acquire(t, g, "h", free, "f2", time.Minute); w == 0 {
		t.Fatal("a second request was granted while another crawl asks for one at a time")
	}
	release(t, g, "h", "f1")
	// b stops asking: after keep, a's delay is the host's.
	time.Sleep(keep + 200*time.Millisecond)
	if w := acquire(t, g, "h", a, "a2", time.Minute); w != 0 {
		t.Fatalf("ask long after every request waits %s, want granted", w)
	}
	release(t, g, "h", "a2")
	if w := acquire(t, g, "h", a, "a3", time.Minute); w > 100*time.Millisecond {
		t.Fatalf("after b's rule expired, a waits %s, want at most its own 100ms", w)
	}
}

// TestGateDeadHolderFreesTheSlotAfterItsLease: a holder that never releases (its
// fetcher was killed) keeps the slot for its lease only.
func TestGateDeadHolderFreesTheSlotAfterItsLease(t *testing.T) {
	g, _ := newGate(t, hostgate.Config{})
	r := hostgate.Rule{Concurrency: 1}
	const lease = 400 * time.Millisecond
	if w := acquire(t, g, "h", r, "dead", lease); w != 0 {
		t.Fatalf("first ask waits %s, want granted", w)
	}
	began := time.Now()
	for {
		w := acquire(t, g, "h", r, "next", time.Minute)
		if w == 0 {
			break
		}
		if time.Since(began) > 10*time.Second {
			t.Fatal("the dead holder's slot was never freed")
		}
		time.Sleep(w)
	}
	if took := time.Since(began); took < lease-50*time.Millisecond {
		t.Fatalf("the slot was granted again after %s, before the dead holder's lease of %s ended", took, lease)
	}
}

// TestGateKeysExpireAndSpreadOverACluster: every host's gate is its own key, tagged by
// the host, so a cluster takes the asks of many hosts on many slots, and an idle host's
// key expires.
func TestGateKeysExpireAndSpreadOverACluster(t *testing.T) {
	c := streamstest.StartCluster(t, 3)
	rdb := c.Client()
	g, err := hostgate.New(rdb, hostgate.Config{Keep: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.WithoutCancel(t.Context())
	for i := range 60 {
		host := fmt.Sprintf("h%d.example:8080", i)
		if w, err := g.Acquire(ctx, host, hostgate.Rule{Delay: time.Millisecond, Concurrency: 1}, "t", time.Second); err != nil || w != 0 {
			t.Fatalf("acquire %s: wait %s, %v", host, w, err)
		}
		if err := g.Release(ctx, host, "t", 0); err != nil {
			t.Fatal(err)
		}
	}
	masters := 0
	for _, m := range c.Masters() {
		if n, err := m.Client().DBSize(ctx).Result(); err != nil {
			t.Fatal(err)
		} else if n > 0 {
			masters++
		}
	}
	if masters < 2 {
		t.Errorf("60 hosts' gates on %d masters, want them spread", masters)
	}
	ttl, err := rdb.PTTL(ctx, streams.HostGate("h0.example:8080")).Result()
	if err != nil || ttl <= 0 || ttl > 3*time.Second {
		t.Errorf("a gate's TTL %s (%v), want about keep plus a second", ttl, err)
	}
}

// TestGateBackoffHoldsEveryCrawl: an answer asking to wait (Retry-After) holds the
// host for every crawl, whatever their rules.
func TestGateBackoffHoldsEveryCrawl(t *testing.T) {
	g, _ := newGate(t, hostgate.Config{})
	free := hostgate.Rule{}
	if w := acquire(t, g, "h", free, "1", time.Minute); w != 0 {
		t.Fatalf("first ask waits %s, want granted", w)
	}
	if err := g.Release(t.Context(), "h", "1", 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if w := acquire(t, g, "h", free, "2", time.Minute); w < time.Second || w > 2*time.Second {
		t.Fatalf("ask after a 2s back-off waits %s, want about 2s", w)
	}
	if w := acquire(t, g, "other", free, "2", time.Minute); w != 0 {
		t.Fatalf("another host waits %s, want granted", w)
	}
}

// TestGateOddDelay: a delay of an odd number of ms longer than keep (so the key's TTL
// comes from it) is kept.
func TestGateOddDelay(t *testing.T) {
	g, _ := newGate(t, hostgate.Config{Keep: time.Second})
	r := hostgate.Rule{Delay: 2001 * time.Millisecond, Concurrency: 1}
	if w := acquire(t, g, "h", r, "1", time.Second); w != 0 {
		t.Fatalf("first ask waits %s, want granted", w)
	}
	release(t, g, "h", "1")
	if w := acquire(t, g, "h", r, "2", time.Second); w < time.Second {
		t.Fatalf("ask after the release waits %s, want about the delay", w)
	}
}
