package streams

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams/loop"
)

// acker sends XACKs in batches. An ID waits at most interval: it goes with the
// subscription's next read (take, in the read's pipeline: no round trip of its own)
// or, if no read comes first, in an XACK of the acker's own. A failed XACK is retried
// with backoff until it succeeds or the acker closes (then the IDs stay pending and are
// delivered again: a duplicate, never a loss).
type acker struct {
	ctx      context.Context // the values of every XACK (not its cancellation: close stops the acker)
	rdb      redis.UniversalClient
	stream   string
	group    string
	batch    int
	interval time.Duration
	errLog   *loop.Errors

	mu      sync.Mutex
	pending []string
	sending map[string]bool // IDs taken for an XACK not known to have landed yet
	since   time.Time       // when the oldest pending ID was added

	wake chan struct{} // a first pending ID, or a full batch
	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once
	err  error // of the IDs flushes gave up on at close; set before wg.Done
}

// ackerCloseTimeout bounds the last flush of the acks, at close, and each XACK.
const ackerCloseTimeout = 5 * time.Second

// newAcker starts an acker; ctx's values go with every XACK, its end does not stop it
// (close does).
func newAcker(ctx context.Context, rdb redis.UniversalClient, stream, group string, batch int, interval time.Duration, errLog *loop.Errors) *acker {
	a := &acker{ctx: context.WithoutCancel(ctx), rdb: rdb, stream: stream, group: group, batch: batch, interval: interval, errLog: errLog,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), sending: map[string]bool{}}
	a.wg.Add(1)
	go a.run()
	return a
}

// add queues id for acking.
func (a *acker) add(id string) {
	a.mu.Lock()
	if len(a.pending) == 0 {
		a.since = time.Now()
	}
	a.pending = append(a.pending, id)
	n := len(a.pending)
	a.mu.Unlock()
	if n == 1 || n >= a.batch {
		a.poke()
	}
}

// queued reports whether id waits to be acked, or its XACK is on its way.
func (a *acker) queued(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sending[id] || slices.Contains(a.pending, id)
}

// take returns the pending IDs for the caller to ack; acked says it did, giveBack
// returns them if that failed.
func (a *acker) take() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	ids := a.pending
	a.pending = nil
	for _, id := range ids {
		a.sending[id] = true
	}
	return ids
}

// acked forgets ids taken for an XACK that landed (or was given up on).
func (a *acker) acked(ids []string) {
	a.mu.Lock()
	for _, id := range ids {
		delete(a.sending, id)
	}
	a.mu.Unlock()
}

func (a *acker) giveBack(ids []string) {
	a.mu.Lock()
	if len(a.pending) == 0 {
		a.since = time.Now()
	}
	for _, id := range ids {
		delete(a.sending, id)
	}
	a.pending = append(ids, a.pending...)
	a.mu.Unlock()
	a.poke()
}

func (a *acker) poke() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

func (a *acker) run() {
	defer a.wg.Done()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-a.wake:
		case <-timer.C:
		case <-a.stop:
			a.err = errors.Join(a.err, a.flush(a.take(), true))
			return
		}
		a.mu.Lock()
		n, due := len(a.pending), a.since.Add(a.interval)
		a.mu.Unlock()
		if n == 0 {
			continue
		}
		if wait := time.Until(due); n < a.batch && wait > 0 {
			timer.Reset(wait)
			continue
		}
		a.err = errors.Join(a.err, a.flush(a.take(), false)) // an error only if close came meanwhile
	}
}

// flush XACKs ids, retrying until it works; at close it tries for ackerCloseTimeout
// only, and returns the error it gave up with (the IDs stay pending).
func (a *acker) flush(ids []string, closing bool) error {
	if len(ids) == 0 {
		return nil
	}
	defer a.acked(ids)
	deadline := time.Now().Add(ackerCloseTimeout)
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(a.ctx, ackerCloseTimeout)
		err := a.rdb.XAck(ctx, a.stream, a.group, ids...).Err()
		cancel()
		if err == nil {
			return nil
		}
		if isNoGroup(err) {
			// The group is gone, and with it the entries' places in it: nothing to ack,
			// and no retry makes the group come back (see readFailed).
			return fmt.Errorf("streams: ack %d entries of %s: %w (its group is gone)", len(ids), a.stream, err)
		}
		a.errLog.Warn("xack failed; retrying", err)
		if closing && time.Now().After(deadline) {
			return fmt.Errorf("streams: ack %d entries of %s: %w (they stay pending, to be delivered again)", len(ids), a.stream, err)
		}
		backoff := loop.Backoff(50*time.Millisecond, 2*time.Second, attempt)
		if !closing {
			select {
			case <-a.stop:
				closing = true
			case <-time.After(backoff):
			}
		} else {
			time.Sleep(backoff)
		}
	}
}

// close flushes what is queued and stops; it returns the error of acks it gave up on.
func (a *acker) close() error {
	a.once.Do(func() { close(a.stop) })
	a.wg.Wait()
	return a.err
}
