package streams

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// acker sends XACKs in batches: an ID waits at most interval for others to join its
// XACK, and a failed XACK is retried with backoff until it succeeds or the acker closes
// (then the IDs stay pending and are delivered again: a duplicate, never a loss).
type acker struct {
	rdb      redis.UniversalClient
	stream   string
	group    string
	batch    int
	interval time.Duration
	errLog   *rateLimited

	in   chan string
	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

func newAcker(rdb redis.UniversalClient, stream, group string, batch int, interval time.Duration, errLog *rateLimited) *acker {
	a := &acker{rdb: rdb, stream: stream, group: group, batch: batch, interval: interval, errLog: errLog,
		in: make(chan string, batch), stop: make(chan struct{})}
	a.wg.Add(1)
	go a.run()
	return a
}

// add queues id for acking.
func (a *acker) add(id string) { a.in <- id }

func (a *acker) run() {
	defer a.wg.Done()
	ids := make([]string, 0, a.batch)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case id := <-a.in:
			if len(ids) == 0 {
				timer.Reset(a.interval)
			}
			ids = append(ids, id)
			if len(ids) < a.batch {
				continue
			}
		case <-timer.C:
		case <-a.stop:
			for {
				select {
				case id := <-a.in:
					ids = append(ids, id)
					continue
				default:
				}
				break
			}
			a.flush(ids, true)
			return
		}
		timer.Stop()
		a.flush(ids, false)
		ids = ids[:0]
	}
}

// flush XACKs ids, retrying until it works; at close it tries for a few seconds only.
func (a *acker) flush(ids []string, closing bool) {
	if len(ids) == 0 {
		return
	}
	deadline := time.Now().Add(5 * time.Second)
	backoff := 50 * time.Millisecond
	for {
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
		if !closing {
			select {
			case <-a.stop:
				closing = true
			case <-time.After(backoff):
			}
		} else {
			time.Sleep(backoff)
		}
		backoff = min(backoff*2, 2*time.Second)
	}
}

// close flushes what is queued and stops.
func (a *acker) close() {
	a.once.Do(func() { close(a.stop) })
	a.wg.Wait()
}
