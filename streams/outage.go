package streams

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/streams/loop"
)

// metaOutage marks a message whose handler failed because Redis refused a write for a
// reason that is not about the message (see Fail).
const metaOutage = "sc_outage"

// errWriteRefused wraps errors of a Redis server that refuses writes for a reason that is
// not about the message: out of memory under noeviction, a read-only replica, a failing
// RDB save, missing replicas, a loading server. Such a failure is an outage to wait out,
// never a reason to count a delivery, refetch a page or write a dead letter.
var errWriteRefused = errors.New("streams: redis refuses writes")

// refusalPrefixes are the Redis error codes that refuse a write for the server's own
// reasons. Errors raised inside a script keep the code at the start of the message.
var refusalPrefixes = []string{"OOM ", "READONLY ", "MISCONF ", "NOREPLICAS ", "MASTERDOWN ", "LOADING ", "CLUSTERDOWN "}

// isWriteRefused reports whether err (or any error it wraps) is a server-side refusal of
// a write that is not about the message (see errWriteRefused), or says that Redis could
// not be reached: a connection refused, reset or timed out, the Sentinels naming no
// primary. A failover or a restart shows as those, and the same write goes through
// once it is over.
func isWriteRefused(err error) bool {
	if unreachable(err) {
		return true
	}
	for err != nil {
		if err == errWriteRefused {
			return true
		}
		msg := err.Error()
		for _, p := range refusalPrefixes {
			if strings.HasPrefix(msg, p) {
				return true
			}
		}
		if strings.Contains(msg, "OOM command not allowed") {
			return true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if isWriteRefused(e) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}

// unreachable reports an error of a Redis that could not be reached or stopped
// answering: a network error (refused, reset, timed out), a connection closed under a
// command, or a Sentinel failover client finding no primary. A client closed by its own
// process (redis.ErrClosed) and an ended context are not.
func unreachable(err error) bool {
	if err == nil || errors.Is(err, redis.ErrClosed) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	// An HTTP client's error (a site that reset, refused or timed out) is about the
	// site, never Redis: go-redis does not return *url.Error.
	var ue *url.Error
	if errors.As(err, &ue) {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	msg := err.Error()
	return strings.HasPrefix(msg, "redis: all sentinels") || strings.Contains(msg, "use of closed network connection")
}

// Outage tracks whether Redis refuses this process's writes. Every stage of a process
// shares one: while it is on, subscribers read no new entries, held messages wait, and
// the runner never reports the crawl done. It logs one line when an outage starts, a
// reminder once a minute while it lasts and one line when it ends, and counts
// write_outages (outages seen) and writes_refused (refused writes) in the crawl's
// counters. A nil *Outage is valid and tracks nothing; a zero one logs nothing.
type Outage struct {
	// Logger gets the outage's lines; nil means no-op.
	Logger *zap.Logger
	// Counters, when set, counts write_outages and writes_refused.
	Counters *Counters

	now func() time.Time // the clock; time.Now

	mu       sync.Mutex
	since    time.Time // zero: no outage
	last     time.Time // the last refusal
	lastLog  time.Time
	nRefused int64
	lastErr  string
	notified chan struct{} // closed when the outage ends
}

// outageStale is how long after its last refusal an outage counts as over even though
// no write was seen to go through (held messages retry at least every 5 s while Redis
// refuses, so a real outage refreshes it): reading resumes, and a write that is refused
// again starts a new outage.
const outageStale = 15 * time.Second

// refused records a refused write. It returns false (and records nothing) when err is
// not a refusal.
func (o *Outage) refused(err error) bool {
	if !isWriteRefused(err) {
		return false
	}
	if o == nil {
		return true
	}
	now := o.clock()
	o.mu.Lock()
	if !o.since.IsZero() && now.Sub(o.last) >= outageStale {
		o.since = time.Time{} // stale: this is a new outage
		close(o.notified)
	}
	started := o.since.IsZero()
	if started {
		o.since, o.lastLog, o.nRefused = now, now, 0
		o.notified = make(chan struct{})
	}
	o.nRefused++
	o.last = now
	o.lastErr = err.Error()
	remind := !started && now.Sub(o.lastLog) >= time.Minute
	if remind {
		o.lastLog = now
	}
	since, n := o.since, o.nRefused
	o.mu.Unlock()
	if o.Counters != nil {
		o.Counters.Add("writes_refused", 1)
		if started {
			o.Counters.Add("write_outages", 1)
		}
	}
	switch {
	case started:
		o.logger().Error("redis refuses writes: stopped reading new work, holding what is in flight "+
			"until it accepts writes again (out of memory: free memory or raise maxmemory; a failover or "+
			"missing replicas: it ends by itself; nothing is dropped)",
			zap.Error(err))
	case remind:
		o.logger().Error("redis still refuses writes; crawl stalled", zap.Duration("for", now.Sub(since).Round(time.Second)),
			zap.Int64("refused_writes", n), zap.Error(err))
	}
	return true
}

// accepted records that a write went through: an outage, if any, is over.
func (o *Outage) accepted() {
	if o == nil {
		return
	}
	o.mu.Lock()
	if o.since.IsZero() {
		o.mu.Unlock()
		return
	}
	d, n := o.clock().Sub(o.since), o.nRefused
	o.since = time.Time{}
	close(o.notified)
	o.mu.Unlock()
	o.logger().Warn("redis accepts writes again; resuming", zap.Duration("outage", d.Round(time.Millisecond)),
		zap.Int64("refused_writes", n))
}

// Active reports whether Redis refused the last write seen, less than outageStale ago.
func (o *Outage) Active() bool {
	if o == nil {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return !o.since.IsZero() && o.clock().Sub(o.last) < outageStale
}

// ended returns a channel closed when the current outage ends (nil when there is none).
func (o *Outage) ended() <-chan struct{} {
	if o == nil {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.since.IsZero() {
		return nil
	}
	return o.notified
}

// outageBackoff is the wait before write attempt n (0-based) during an outage: from
// 50-150 ms up to 5 s.
func outageBackoff(n int) time.Duration {
	return loop.Backoff(100*time.Millisecond, 5*time.Second, n+1)
}

// clock is the outage's clock (time.Now unless a test sets now).
func (o *Outage) clock() time.Time {
	if o.now != nil {
		return o.now()
	}
	return time.Now()
}

// logger is Logger, or a no-op.
func (o *Outage) logger() *zap.Logger {
	if o.Logger != nil {
		return o.Logger
	}
	return zap.NewNop()
}
