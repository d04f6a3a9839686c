package streams

import (
	"context"
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
	rdb      redis.UniversalClient
	stream   string
	group    string
	batch    int
	interval time.Duration
	errLog   *loop.Errors

	mu      sync.Mutex
	pending []string
	since   time.Time // when the oldest pending ID was added

	wake chan struct{} // a first pending ID, or a full batch
	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

func newAcker(rdb redis.UniversalClient, stream, group string, batch int, interval time.Duration, errLog *loop.Errors) *acker {
	a := &acker{rdb: rdb, stream: stream, group: group, batch: batch, interval: interval, errLog: errLog,
		wake: make(chan struct{}, 1), stop: make(chan struct{})}
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

// queued reports whether id waits to be acked.
func (a *acker) queued(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Contains(a.pending, id)
}

// take returns the pending IDs for the caller to ack; giveBack returns them if that
// failed.
func (a *acker) take() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	ids := a.pending
	a.pending = nil
	return ids
}

func (a *acker) giveBack(ids []string) {
	a.mu.Lock()
	if len(a.pending) == 0 {
		a.since = time.Now()
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
			a.flush(a.take(), true)
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
		a.flush(a.take(), false)
	}
}

// flush XACKs ids, retrying until it works; at close it tries for a few seconds only.
func (a *acker) flush(ids []string, closing bool) {
	if len(ids) == 0 {
		return
	}
	deadline := time.Now().Add(5 * time.Second)
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := a.rdb.XAck(ctx, a.stream, a.group, ids...).Err()
		cancel()
		if err == nil {
			return
		}
		a.errLog.Warn("xack failed; retrying", err)
		if closing && time.Now().After(deadline) {
			return
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

// close flushes what is queued and stops.
func (a *acker) close() {
	a.once.Do(func() { close(a.stop) })
	a.wg.Wait()
}
