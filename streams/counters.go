package streams

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"
	"github.com/streamcrawl/streamcrawl/streams/loop"
)

// defaultCountersInterval is how often Counters sends its increments.
const defaultCountersInterval = time.Second

// Counters accumulates crawl statistics in process and adds them to the crawl's stats
// hash once per interval with one pipelined HINCRBY per field, so that counting costs
// Redis nothing per page. Increments not yet sent when a process is killed are lost:
// the stats are for people, the crawl's correctness never depends on them.
type Counters struct {
	rdb    redis.UniversalClient
	key    string
	mu     sync.Mutex
	m      map[string]int64
	obs    func(field string, n int64)
	cancel context.CancelFunc
	done   chan struct{}
	adds   atomic.Int64
}

// countersWriteTimeout bounds one send of the increments (and the last one, at a Close
// whose context has no deadline).
const countersWriteTimeout = 5 * time.Second

// NewCounters returns counters for stats hash key, flushed every interval (0: a second)
// until Close. ctx's values go with every send; its end does not stop the counters
// (Close does), so that what a run counts while it shuts down is still sent. observe,
// when set, is also called with every Add (a hook for process metrics, which see
// increments at once rather than once per flush); it must not block.
func NewCounters(ctx context.Context, rdb redis.UniversalClient, key string, interval time.Duration, observe func(field string, n int64)) *Counters {
	if interval <= 0 {
		interval = defaultCountersInterval
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c := &Counters{rdb: rdb, key: key, m: map[string]int64{}, obs: observe, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		_ = loop.Every(ctx, interval, loop.Config{}, func(ctx context.Context) error {
			wctx, cancel := context.WithTimeout(ctx, countersWriteTimeout)
			defer cancel()
			_ = c.flush(wctx) // kept for the next send, or Close's
			return nil
		})
	}()
	return c
}

// Add adds n to field.
func (c *Counters) Add(field string, n int64) {
	c.adds.Add(1)
	c.mu.Lock()
	c.m[field] += n
	c.mu.Unlock()
	if c.obs != nil {
		c.obs(field, n)
	}
}

// Activity returns how many times Add was called in this process: a number that moves
// while the process does the crawl's work (a page fetched, parsed, stored), for a
// watcher that need not ask Redis whether the crawl is done while it plainly is not.
func (c *Counters) Activity() int64 { return c.adds.Load() }

// flush sends the increments counted since the last send; those it could not send are
// kept for the next.
func (c *Counters) flush(ctx context.Context) error {
	c.mu.Lock()
	m := c.m
	c.m = map[string]int64{}
	c.mu.Unlock()
	if len(m) == 0 {
		return nil
	}
	pipe := c.rdb.Pipeline()
	for f, n := range m {
		pipe.HIncrBy(ctx, c.key, f, n)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		// Keep them for the next try (Redis may be restarting).
		c.mu.Lock()
		for f, n := range m {
			c.m[f] += n
		}
		c.mu.Unlock()
		return fmt.Errorf("streams: counters: %w", err)
	}
	return nil
}

// Close stops the periodic sends and sends what is left, under ctx's values and
// deadline (5s when it has none; it runs even when ctx was cancelled). It returns the
// last send's error: those increments are lost.
func (c *Counters) Close(ctx context.Context) error {
	c.cancel()
	<-c.done
	ctx, cancel := rkit.Cleanup(ctx, countersWriteTimeout)
	defer cancel()
	return c.flush(ctx)
}
