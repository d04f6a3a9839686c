package handlers

import (
	"cmp"
	"context"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/streamcrawl/streamcrawl/streams/loop"
)

// waitLogInterval is how often a fetch process sums up at INFO the requests that
// had to wait (retries, hosts that asked to slow down, robots.txt waits).
const waitLogInterval = 10 * time.Second

// sampled returns log with a sampler that lets through the first n entries of each
// message per second and drops the rest: for lines that may come once per request.
func sampled(log *zap.Logger, n int) *zap.Logger {
	return log.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		return zapcore.NewSamplerWithOptions(c, time.Second, n, 0)
	}))
}

// waitLog counts the requests that had to wait and logs their sum at INFO once per
// interval when there were any, so that a crawl waiting on slow or busy hosts is
// visible without debug logging, and an outage cannot flood the log.
type waitLog struct {
	retries, slow, robots atomic.Int64
	log                   *zap.Logger
	interval              time.Duration // default waitLogInterval
}

// count is a streams.Counters observer.
func (w *waitLog) count(field string, n int64) {
	switch field {
	case "retries_scheduled":
		w.retries.Add(n)
	case "host_slowdowns":
		w.slow.Add(n)
	case "robots_waits", "robots_turns":
		w.robots.Add(n)
	}
}

// Run logs every interval until ctx ends, then returns nil.
func (w *waitLog) Run(ctx context.Context) error {
	interval := cmp.Or(w.interval, waitLogInterval)
	return loop.Every(ctx, interval, loop.Config{}, func(context.Context) error {
		w.flush(interval)
		return nil
	})
}

// flush logs the waits counted over the last interval, if any, and starts again.
func (w *waitLog) flush(interval time.Duration) {
	r, p, rb := w.retries.Swap(0), w.slow.Swap(0), w.robots.Swap(0)
	if r+p+rb > 0 {
		w.log.Info("requests waiting", zap.Duration("last", interval), zap.Int64("retries_scheduled", r),
			zap.Int64("host_slowdowns", p), zap.Int64("robots_waits", rb))
	}
}
