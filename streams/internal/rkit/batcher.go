package rkit

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrClosed is returned for work handed to a closed batcher or publisher.
var ErrClosed = errors.New("rkit: closed")

// Batcher sends commands from many goroutines to Redis in shared pipelines (group
// commit): while one pipeline is on the wire, the next one fills. A caller waits for its
// own command's reply, so it never learns "done" before Redis has the write; no command
// waits for a timer, so an idle Batcher adds no latency.
type Batcher struct {
	rdb     redis.UniversalClient
	max     int
	timeout time.Duration
	linger  time.Duration
	jobs    chan *Job
	stop    chan struct{}
	wg      sync.WaitGroup
	once    sync.Once
	gate    Gate // no submit is under way once run drains the queue
}

// Job is one command queued on a batcher.
type Job struct {
	add  func(ctx context.Context, p redis.Pipeliner) redis.Cmder
	cmd  redis.Cmder
	done chan struct{}
}

// NewBatcher returns a batcher of at most max commands per pipeline. After the first
// command of a pipeline arrives it waits up to linger for others (0: no wait): a round
// trip costs Redis ~10 µs of network work whatever it carries, so a millisecond of
// latency buys a lot of Redis CPU when commands trickle in.
func NewBatcher(rdb redis.UniversalClient, max int, timeout, linger time.Duration) *Batcher {
	b := &Batcher{rdb: rdb, max: max, timeout: timeout, linger: linger, jobs: make(chan *Job, max), stop: make(chan struct{})}
	// A few pipelines may be on the wire at once, so one slow round trip does not hold
	// up every writer behind it.
	for i := 0; i < batcherPipelines; i++ {
		b.wg.Add(1)
		go b.run()
	}
	return b
}

// batcherPipelines is how many pipelines one batcher keeps on the wire at most.
const batcherPipelines = 1

// Do queues add and waits for its reply; the returned Cmder holds the result.
func (b *Batcher) Do(ctx context.Context, add func(ctx context.Context, p redis.Pipeliner) redis.Cmder) (redis.Cmder, error) {
	j, err := b.Submit(ctx, add)
	if err != nil {
		return nil, err
	}
	return j.Wait()
}

// Submit queues add without waiting for its reply.
func (b *Batcher) Submit(ctx context.Context, add func(ctx context.Context, p redis.Pipeliner) redis.Cmder) (*Job, error) {
	j := &Job{add: add, done: make(chan struct{})}
	if !b.gate.Enter() {
		return nil, ErrClosed
	}
	defer b.gate.Leave()
	select {
	case b.jobs <- j:
		return j, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Wait returns the job's reply. Once queued a job always runs, so a caller never treats
// a write that may still land as not done.
func (j *Job) Wait() (redis.Cmder, error) {
	<-j.done
	return j.cmd, j.cmd.Err()
}

func (b *Batcher) run() {
	defer b.wg.Done()
	batch := make([]*Job, 0, b.max)
	for {
		select {
		case j := <-b.jobs:
			batch = append(batch[:0], j)
		case <-b.stop:
			// Drain what was queued before stop.
			for {
				select {
				case j := <-b.jobs:
					b.exec([]*Job{j})
				default:
					return
				}
			}
		}
		b.fill(&batch)
		b.exec(batch)
	}
}

// fill adds queued jobs to batch, waiting up to linger for more.
func (b *Batcher) fill(batch *[]*Job) {
	var deadline <-chan time.Time
	if b.linger > 0 {
		t := time.NewTimer(b.linger)
		defer t.Stop()
		deadline = t.C
	}
	for len(*batch) < b.max {
		select {
		case j := <-b.jobs:
			*batch = append(*batch, j)
			continue
		default:
		}
		if deadline == nil {
			return
		}
		select {
		case j := <-b.jobs:
			*batch = append(*batch, j)
		case <-deadline:
			return
		case <-b.stop:
			return
		}
	}
}

func (b *Batcher) exec(batch []*Job) {
	ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
	defer cancel()
	pipe := b.rdb.Pipeline()
	for _, j := range batch {
		j.cmd = j.add(ctx, pipe)
	}
	_, _ = pipe.Exec(ctx) // per-command errors are read by each caller
	for _, j := range batch {
		close(j.done)
	}
}

// Close stops taking jobs after running the queued ones.
func (b *Batcher) Close() {
	b.once.Do(func() {
		b.gate.Shut()
		close(b.stop)
	})
	b.wg.Wait()
}
