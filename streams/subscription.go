package streams

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"
	"github.com/streamcrawl/streamcrawl/streams/loop"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// subscription is one stream read by one Subscriber. Its goroutines: the read loop, the
// claimer (XAUTOCLAIM + heartbeat), the acker, and one waiter per message in flight.
type subscription struct {
	cfg    SubscriberConfig
	rdb    redis.UniversalClient
	stream string
	dead   string // the dead-letter stream
	log    *zap.Logger
	errLog *loop.Errors

	out   chan *message.Message
	slots chan struct{} // one token per message in flight
	acks  *acker

	ctx      context.Context // ends when reading must stop
	cancel   context.CancelFunc
	hard     context.Context // message contexts: end at the shutdown deadline
	hardStop context.CancelFunc

	mu       sync.Mutex
	inflight map[string]*hold // entry ID -> what we know of our hold on it (fence.go)
	retrying map[string]bool  // entry IDs nacked and waiting for their redelivery (retry.go)
	adopting atomic.Bool      // our pending entries from a previous life were read: orphans may be adopted

	claimer   sync.WaitGroup // the claimer (close waits for it; not for the read loop)
	waiters   sync.WaitGroup // one per message in flight or waiting for a retry
	closeOnce sync.Once

	// handing is held (shared) while the read loop hands out what a read returned;
	// close takes it to set closed, after which the read loop starts no read. A stop
	// mid-crawl (drain) waits for a read still blocked in Redis, while the handlers
	// finish, and hands out what it returns as in-flight work: new entries arrive
	// there then (the other stages' output, our own stages' last writes), and a
	// graceful stop leaves nothing pending. A stop because nothing more can come
	// (ErrNothingMore: every end of a crawl) does not wait up to BlockTime for a read
	// blocked on an idle stream.
	handing sync.RWMutex
	closed  bool
	drain   bool          // set with closed: the last read's entries are handed out
	readEnd chan struct{} // closed when the read loop returns

	closeErr error // acks close gave up on (they stay pending); set in closeOnce
}

func newSubscription(parent context.Context, cfg SubscriberConfig, stream string, slots chan struct{}, log *zap.Logger) *subscription {
	ctx, cancel := context.WithCancel(parent)
	hard, hardStop := context.WithCancel(context.WithoutCancel(parent))
	s := &subscription{
		cfg: cfg, rdb: cfg.Client, stream: stream, dead: cfg.DeadStream, log: log, errLog: loop.NewErrors(log, 5*time.Second),
		out: make(chan *message.Message), slots: slots,
		ctx: ctx, cancel: cancel, hard: hard, hardStop: hardStop,
		inflight: map[string]*hold{}, retrying: map[string]bool{}, readEnd: make(chan struct{}),
	}
	if s.dead == "" {
		s.dead = deadOf(stream)
	}
	s.acks = newAcker(parent, cfg.Client, stream, cfg.Group, cfg.AckBatch, cfg.AckInterval, s.errLog)
	return s
}

// start starts the read loop and the claimer. The claimer is counted before either
// goroutine starts, so that a Close that comes at once waits for it; the read loop
// hands out nothing once close began (see handing).
func (s *subscription) start() {
	s.claimer.Add(1)
	go s.run()
}

// run reads until the subscription closes, with the claimer it starts.
func (s *subscription) run() {
	go func() { defer s.claimer.Done(); s.claimLoop() }()
	go func() {
		<-s.ctx.Done()
		s.close()
	}()
	defer close(s.readEnd)
	s.readOwnPending()
	s.adopting.Store(true)
	s.readNew()
}

// readable reports whether the subscription is open and, if so, whether reading is held
// back (an outage, or the Gate says no). It asks under handing, so that no read is
// decided once close began: after Close returns the Gate is not asked again (a read
// decided just before may still be sent; what it returns stays pending, see handing).
func (s *subscription) readable() (open, held bool) {
	s.handing.RLock()
	defer s.handing.RUnlock()
	if s.closed {
		return false, false
	}
	return true, s.cfg.Outage.Active() || (s.cfg.Gate != nil && !s.cfg.Gate())
}

// handOutRead hands out entries the read loop read (with their delivery counts; nil:
// first deliveries) with a read that left at sent (zero: a read that did not restart
// their idle time), unless close began without drain; it reports whether reading may
// go on. Entries not handed out stay pending for our restart or a reclaim.
func (s *subscription) handOutRead(msgs []redis.XMessage, deliveries map[string]int64, sent time.Time) bool {
	s.handing.RLock()
	defer s.handing.RUnlock()
	if s.closed && !s.drain {
		return false
	}
	// Every entry read is ours in hand from now on, also while it waits for a slot, so
	// that the claimer does not take it for one a lost reply delivered (orphans.go).
	for _, m := range msgs {
		s.register(m.ID, sent)
	}
	for i, m := range msgs {
		n := int64(1)
		if deliveries != nil {
			n = deliveries[m.ID]
			if n > int64(s.cfg.MaxDeliveries) {
				// It was ours and never acked, again and again: it may be what kills us.
				s.forget(m.ID)
				s.deadLetter(m.ID, int(n-1), fmt.Sprintf("delivered %d times without an ack (consumer died or timed out)", n-1))
				continue
			}
		}
		if !s.acquire() {
			for _, rest := range msgs[i:] {
				s.forget(rest.ID)
			}
			return false // shutting down: the rest stays pending for our restart
		}
		s.dispatch(m, int(n), sent)
	}
	return !s.closed
}

// readOwnPending re-delivers entries this consumer holds from a previous life.
func (s *subscription) readOwnPending() {
	id, failures := "0", 0
	for s.ctx.Err() == nil {
		// Reads use the hard context: a read cancelled in flight could leave entries
		// delivered to us with nobody to handle them.
		res, err := s.rdb.XReadGroup(s.hard, &redis.XReadGroupArgs{
			Group: s.cfg.Group, Consumer: s.cfg.Consumer, Streams: []string{s.stream, id},
			Count: int64(s.cfg.BatchSize), Block: -1,
		}).Result()
		if err != nil {
			if s.ctx.Err() != nil {
				return
			}
			failures++
			s.readFailed(err, failures)
			continue
		}
		failures = 0
		if len(res) == 0 || len(res[0].Messages) == 0 {
			return
		}
		msgs := res[0].Messages
		id = msgs[len(msgs)-1].ID
		// Whether re-reading our own pending entries restarts their idle time is not
		// relied on: their holds are confirmed in Redis at their first check.
		if !s.handOutRead(msgs, s.deliveryCounts(msgs), time.Time{}) {
			return
		}
	}
}

// deliveryCounts returns the delivery counts of our pending entries msgs (0 if unknown).
func (s *subscription) deliveryCounts(msgs []redis.XMessage) map[string]int64 {
	counts := make(map[string]int64, len(msgs))
	ext, err := s.rdb.XPendingExt(s.ctx, &redis.XPendingExtArgs{
		Stream: s.stream, Group: s.cfg.Group, Consumer: s.cfg.Consumer,
		Start: msgs[0].ID, End: msgs[len(msgs)-1].ID, Count: int64(len(msgs)),
	}).Result()
	if err != nil {
		return counts
	}
	for _, p := range ext {
		counts[p.ID] = p.RetryCount
	}
	return counts
}

// readNew reads new entries ('>'), as many as there are free slots. It holds no slot
// while its read blocks, so the claimer can dispatch meanwhile; a read entry waits for a
// slot before it is handed out.
func (s *subscription) readNew() {
	failures := 0
	for {
		open, held := s.readable()
		if !open {
			return
		}
		if held {
			if !sleepCtx(s.ctx, 100*time.Millisecond) {
				return
			}
			continue
		}
		if !s.waitFree() {
			return
		}
		if !s.gatherFree() {
			s.release()
			return
		}
		n := min(s.cfg.BatchSize, s.free()+1)
		s.release()
		// The read blocks at most BlockTime and is never cancelled (see readOwnPending);
		// what it returns is handed out unless close began meanwhile (see handing).
		sent := time.Now()
		res, err := s.readWithAcks(n)
		got := 0
		if err == nil && len(res) > 0 {
			if !s.handOutRead(res[0].Messages, nil, sent) {
				return
			}
			got = len(res[0].Messages)
		}
		if got > 0 && got < n/2 && s.cfg.ReadLinger > 0 {
			// A trickle: let entries gather so the next read takes several in one call.
			// Each call costs Redis far more than the entries it returns.
			sleepCtx(s.ctx, s.trickleWait())
		}
		if err != nil && !rkit.ErrNil(err) {
			if s.ctx.Err() != nil {
				return
			}
			failures++
			s.readFailed(err, failures)
		} else {
			failures = 0
		}
	}
}

// readWithAcks reads up to n new entries, blocking up to BlockTime, and sends the acks
// waiting in the acker in the same round trip.
func (s *subscription) readWithAcks(n int) ([]redis.XStream, error) {
	args := &redis.XReadGroupArgs{Group: s.cfg.Group, Consumer: s.cfg.Consumer,
		Streams: []string{s.stream, ">"}, Count: int64(n), Block: s.cfg.BlockTime}
	ids := s.acks.take()
	if len(ids) == 0 {
		return s.rdb.XReadGroup(s.hard, args).Result()
	}
	pipe := s.rdb.Pipeline()
	ack := pipe.XAck(s.hard, s.stream, s.cfg.Group, ids...)
	read := pipe.XReadGroup(s.hard, args)
	_, _ = pipe.Exec(s.hard) // each command's error is read below
	if ack.Err() != nil {
		s.acks.giveBack(ids) // the acker retries them
	} else {
		s.acks.acked(ids)
	}
	return read.Result()
}

// gatherFree waits, up to ReadLinger, while fewer than half of the batch's slots are
// free (the read loop holding one), so that a busy stage reads several entries per
// XREADGROUP instead of one per finished message: each call costs Redis far more than
// the entries it returns. A stage with free slots reads at once. It returns false once
// reading must stop.
func (s *subscription) gatherFree() bool {
	want := max(1, min(s.cfg.BatchSize, cap(s.slots))/2)
	if s.cfg.ReadLinger <= 0 || s.free()+1 >= want {
		return true
	}
	deadline := time.Now().Add(s.cfg.ReadLinger)
	for s.free()+1 < want && time.Now().Before(deadline) {
		if !sleepCtx(s.ctx, time.Millisecond) {
			return false
		}
	}
	return true
}

// trickleWait is how long the reader lets entries gather after a short read:
// ReadLinger scaled by the share of slots busy. A busy stage loses nothing by reading
// later (its handlers have work); a mostly idle one, whose supply is bounded elsewhere
// (a host's concurrency, a slow site), would sit idle through the whole linger, so it
// waits in proportion (at least a millisecond).
func (s *subscription) trickleWait() time.Duration {
	busy := cap(s.slots) - s.free()
	return max(time.Millisecond, s.cfg.ReadLinger*time.Duration(busy)/time.Duration(cap(s.slots)))
}

// free returns the number of free slots.
func (s *subscription) free() int { return cap(s.slots) - len(s.slots) }

// readFailed logs a read error at a bounded rate, repairs a missing group, and backs
// off (failures counts the reads that failed in a row, this one included).
func (s *subscription) readFailed(err error, failures int) {
	s.errLog.Warn("read failed; retrying", err)
	if isNoGroup(err) {
		// The stream or its group is gone. When the crawl's whole state is gone, the
		// group must not come back (MKSTREAM) as if the crawl went on: CheckState first.
		if serr := s.cfg.checkState(s.ctx); serr != nil {
			s.errLog.Warn("group missing; not recreated", serr)
		} else if gerr := ensureGroup(s.ctx, s.rdb, s.stream, s.cfg.Group, s.cfg.StartID); gerr != nil {
			s.errLog.Warn("recreate group failed", gerr)
		}
	}
	sleepCtx(s.ctx, loop.Backoff(300*time.Millisecond, time.Second, failures))
}

// acquire takes a slot for an entry in hand; it gives up only at the shutdown deadline.
func (s *subscription) acquire() bool {
	select {
	case s.slots <- struct{}{}:
		return true
	case <-s.hard.Done():
		return false
	}
}

// waitFree waits until a slot is free, holding it; false once reading must stop.
func (s *subscription) waitFree() bool {
	if s.ctx.Err() != nil {
		return false
	}
	select {
	case s.slots <- struct{}{}:
		return true
	case <-s.ctx.Done():
		return false
	}
}

func (s *subscription) release() { <-s.slots }

// close stops reading, hands out what was already read, waits for in-flight messages up
// to the shutdown timeout, flushes acks and closes the output channel. It returns the
// error of acks it could not send (those entries stay pending, delivered again).
func (s *subscription) close() error {
	s.closeOnce.Do(func() {
		s.cancel()
		done := make(chan struct{})
		go func() {
			// After this the read loop starts no read; it may be handing out a read's
			// entries now, waiting for free slots until the shutdown deadline at most.
			// A busy stage also waits for a read still blocked in Redis and hands out
			// what it returns (see handing).
			s.handing.Lock()
			s.closed = true
			s.drain = !errors.Is(context.Cause(s.ctx), ErrNothingMore)
			s.handing.Unlock()
			if s.drain {
				select {
				case <-s.readEnd:
				case <-s.hard.Done():
					// The read is still blocked at the shutdown deadline: what it returns
					// stays pending. Taking handing waits for a hand-out in progress (it
					// gives up at the deadline), and none starts after: the output
					// channel closes below.
					s.handing.Lock()
					s.drain = false
					s.handing.Unlock()
				}
			}
			s.claimer.Wait()
			s.waiters.Wait()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(s.cfg.ShutdownTimeout):
			s.log.Warn("shutdown timeout: unfinished messages stay pending for a reclaim",
				zap.Duration("timeout", s.cfg.ShutdownTimeout))
			s.hardStop()
			<-done
		}
		s.hardStop()
		s.closeErr = s.acks.close()
		s.leave()
		close(s.out)
	})
	return s.closeErr
}

// leave deletes this consumer from its group when it holds nothing pending (a clean
// stop), so that the crawl is not taken for running (inspect.Alive) after it stopped.
// One that holds entries stays, for its restart or a reclaim.
func (s *subscription) leave() {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), 2*time.Second)
	defer cancel()
	s.deleteConsumer(ctx, s.cfg.Consumer)
}

// sleepCtx sleeps for d or until ctx ends; it reports whether the full time passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
