package streams

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/streamcrawl/streamcrawl/streams/loop"
)

// Reach defaults.
const (
	// DefaultReachInterval is how often a Reach looks whether Redis answers.
	DefaultReachInterval = time.Second
	// DefaultReachTimeout is how long Redis may take to answer a PING before a Reach
	// counts it lost.
	DefaultReachTimeout = 3 * time.Second
)

// reachRemind is how often a Reach says again that Redis is still lost.
const reachRemind = time.Minute

// Reach watches whether this process reaches Redis, so that losing it (a partition, a
// Redis that is down or paused) is told in one line when it starts, a reminder once a
// minute, and one line when Redis answers again, not in a line per failed call of every
// part of the process. It pings Redis every Interval, unless a call of the process went
// through since its last look (its hook, added to the client, sees every call); a
// ping that fails or takes longer than Timeout means Redis is lost, one that answers
// means it is back.
//
// Its Quiet wraps the process's log: while Redis is lost, the warnings whose error is a
// failure to reach Redis (the retries of reads, acks, claims, trims, ...) are written at
// debug level instead, and counted in the line that says Redis is back. Errors are
// never quieted.
type Reach struct {
	// Client is the process's Redis. Required.
	Client redis.UniversalClient
	// Logger gets the lines of Reach itself; it must not be a logger that Quiet wraps.
	// Nil means no-op.
	Logger *zap.Logger
	// Interval is how often it looks. Default DefaultReachInterval.
	Interval time.Duration
	// Timeout bounds a ping. Default DefaultReachTimeout.
	Timeout time.Duration

	now     func() time.Time // the clock; time.Now
	called  atomic.Bool      // a call went through since the last look
	wake    chan struct{}    // a call failed as if Redis were unreachable: look now
	hooked  sync.Once
	quieted atomic.Int64 // warnings quieted in this loss

	// The pings, on Run's goroutine only: their answers come on answers (maxPings
	// places: it never blocks a ping); out is how many have not been read, seq the
	// number of the last one sent.
	answers chan pingResult
	out     int
	seq     uint64

	mu      sync.Mutex
	since   time.Time // zero: Redis answers
	lastLog time.Time
}

// Run looks until ctx ends, then returns nil. It adds its hook to Client first.
func (r *Reach) Run(ctx context.Context) error {
	if r.Client == nil {
		return errors.New("streams: reach needs a client")
	}
	r.hook()
	return loop.Every(ctx, cmp.Or(r.Interval, DefaultReachInterval), loop.Config{Now: true, Wake: r.woken}, r.look)
}

// hook adds the hook to the client once, and makes the wake channel.
func (r *Reach) hook() {
	r.hooked.Do(func() {
		r.wake = make(chan struct{}, 1)
		r.answers = make(chan pingResult, maxPings)
		r.Client.AddHook(reachHook{r})
	})
}

func (r *Reach) woken() <-chan struct{} { return r.wake }

// maxPings bounds the pings without an answer yet. The client may hold a ping longer
// than Timeout (its read timeout, when a partition drops the data of its connection):
// a look sends a new ping beside it, on another connection, so that Redis is seen back
// soon after it answers again.
const maxPings = 3

// pingResult is the answer to the ping numbered seq.
type pingResult struct {
	seq uint64
	err error
}

// look pings Redis unless a call went through since the last look while Redis
// answered, and records what it saw: Redis answers when the ping does, or any call of
// the process goes through meanwhile.
func (r *Reach) look(ctx context.Context) error {
	if r.called.Swap(false) && !r.Lost() {
		return nil
	}
	if r.out < maxPings {
		r.seq++
		r.out++
		seq := r.seq
		go func() { r.answers <- pingResult{seq: seq, err: ping(ctx, r.Client)} }()
	}
	err := r.answer(ctx, cmp.Or(r.Timeout, DefaultReachTimeout))
	switch {
	case ctx.Err() != nil:
	case err == nil || r.called.Load():
		r.back()
	default:
		r.lost(err)
	}
	return nil
}

// answer waits up to timeout for an answer to a ping: nil as soon as any answers, the
// error of the last one sent if it fails (an older one failing says nothing about
// now). It runs on Run's goroutine only.
func (r *Reach) answer(ctx context.Context, timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case res := <-r.answers:
			r.out--
			if res.err == nil {
				return nil
			}
			if res.seq == r.seq {
				return res.err
			}
		case <-t.C:
			return fmt.Errorf("streams: no answer to PING within %s", timeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// ping pings the primary, or every master of a cluster.
func ping(ctx context.Context, rdb redis.UniversalClient) error {
	if cc, ok := AsCluster(rdb); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return m.Ping(ctx).Err() })
	}
	return rdb.Ping(ctx).Err()
}

// Lost reports whether Redis did not answer the last look.
func (r *Reach) Lost() bool {
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.since.IsZero()
}

// lost records a look that Redis did not answer: it logs the loss when it starts, and
// a reminder once a minute.
func (r *Reach) lost(err error) {
	now := r.clock()
	r.mu.Lock()
	started := r.since.IsZero()
	if started {
		r.since, r.lastLog = now, now
		r.quieted.Store(0)
	}
	remind := !started && now.Sub(r.lastLog) >= reachRemind
	if remind {
		r.lastLog = now
	}
	since := r.since
	r.mu.Unlock()
	switch {
	case started:
		r.logger().Error("lost Redis: it does not answer; every stage waits for it and retries, nothing is dropped "+
			"(the failed calls are logged at debug until it is back)", zap.Error(err))
	case remind:
		r.logger().Error("Redis still lost", zap.Duration("for", now.Sub(since).Round(time.Second)),
			zap.Int64("failures_quieted", r.quieted.Load()), zap.Error(err))
	}
}

// back records a look that Redis answered: it logs the end of a loss.
func (r *Reach) back() {
	r.mu.Lock()
	since := r.since
	r.since = time.Time{}
	r.mu.Unlock()
	if since.IsZero() {
		return
	}
	r.logger().Warn("Redis back; the stages go on", zap.Duration("lost_for", r.clock().Sub(since).Round(time.Millisecond)),
		zap.Int64("failures_quieted", r.quieted.Load()))
}

// Quiet wraps core (for zap.WrapCore) so that, while Redis is lost, a warning whose
// error is a failure to reach Redis is written at debug level (when core writes that
// level) and counted, instead of at its own.
func (r *Reach) Quiet(core zapcore.Core) zapcore.Core { return quietCore{Core: core, r: r} }

// quiets reports whether an entry at level with fields is quieted, and counts it.
func (r *Reach) quiets(level zapcore.Level, fields []zapcore.Field) bool {
	if level != zapcore.WarnLevel || !r.Lost() {
		return false
	}
	for _, f := range fields {
		if err, ok := f.Interface.(error); ok && f.Type == zapcore.ErrorType && redisFailure(err) {
			r.quieted.Add(1)
			return true
		}
	}
	return false
}

// redisFailure reports an error of a call that could not reach Redis or had no answer
// in time: unreachable, a deadline or a wait for a connection that ran out. A site's
// error (*url.Error) is not.
func redisFailure(err error) bool {
	var ue *url.Error
	if errors.As(err, &ue) {
		return false
	}
	return unreachable(err) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, redis.ErrPoolTimeout)
}

func (r *Reach) clock() time.Time {
	if r.now != nil {
		return r.now()
	}
	return time.Now()
}

func (r *Reach) logger() *zap.Logger { return cmp.Or(r.Logger, zap.NewNop()) }

// quietCore is a zapcore.Core that writes the warnings Reach quiets at debug level.
// It asks its core again which of its parts take each entry (Check), so that the level
// of each part of a tee, or a sampler, still decides.
type quietCore struct {
	zapcore.Core
	r *Reach
}

func (q quietCore) With(fields []zapcore.Field) zapcore.Core {
	return quietCore{Core: q.Core.With(fields), r: q.r}
}

func (q quietCore) Check(ent zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if q.Enabled(ent.Level) {
		return ce.AddCore(ent, q)
	}
	return ce
}

func (q quietCore) Write(ent zapcore.Entry, fields []zapcore.Field) error {
	if q.r.quiets(ent.Level, fields) {
		ent.Level = zapcore.DebugLevel
	}
	if ce := q.Core.Check(ent, nil); ce != nil {
		ce.Write(fields...)
	}
	return nil
}

// reachHook tells a Reach of the process's calls: one that went through spares the
// next ping, one that failed as if Redis were unreachable asks for a look now.
type reachHook struct{ r *Reach }

func (h reachHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h reachHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.seen(err)
		return err
	}
}

func (h reachHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.seen(err)
		return err
	}
}

// seen records a call's outcome: a Redis error reply (redis.Error) is an answer too.
func (h reachHook) seen(err error) {
	var reply redis.Error
	switch {
	case err == nil || errors.Is(err, redis.Nil) || errors.As(err, &reply):
		h.r.called.Store(true)
	case unreachable(err):
		select {
		case h.r.wake <- struct{}{}:
		default:
		}
	}
}
