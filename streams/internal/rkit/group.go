package rkit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrClosed is returned for work handed to a closed group, publisher or subscriber.
var ErrClosed = errors.New("rkit: closed")

// Group commits the items of many goroutines in shared batches (group commit): the
// first item of a batch waits up to a linger for others, the batch runs in one call of
// its flush function (one pipeline, one script call per partition, ...) while the next
// one fills, and each caller learns its item is done only after the batch that holds it
// has run, so it never learns "done" before Redis has the write. The publisher's
// XADDs, the emit queue's script calls and the finisher's turns all go through one.
type Group[T any] struct {
	max     int
	linger  time.Duration
	timeout time.Duration
	size    func(T) int
	flush   func(ctx context.Context, batch []T)

	in   chan entry[T]
	stop chan struct{}
	done chan struct{}
	once sync.Once
	gate gate // no submit is under way once run drains the queue
	// drain is the context of the batches run after Close began (set before stop
	// closes): Close's ctx through Cleanup, so that Close's deadline bounds them.
	drain context.Context
}

type entry[T any] struct {
	v    T
	done chan struct{}
}

// GroupConfig says how a Group batches.
type GroupConfig[T any] struct {
	// Max is the most a batch holds, in Size units. An item that would take a batch
	// past it starts the next batch (an item over Max goes alone).
	Max int
	// Size is an item's weight; nil counts each item as 1.
	Size func(T) int
	// Linger is how long a batch's first item waits for others; 0 or less: none (the
	// batch takes what is queued already).
	Linger time.Duration
	// Timeout bounds one flush (its context).
	Timeout time.Duration
	// Flush runs one batch and records each item's outcome in the item.
	Flush func(ctx context.Context, batch []T)
}

// NewGroup starts a Group; Close stops it.
func NewGroup[T any](cfg GroupConfig[T]) *Group[T] {
	if cfg.Size == nil {
		cfg.Size = func(T) int { return 1 }
	}
	g := &Group[T]{max: max(cfg.Max, 1), linger: cfg.Linger, timeout: cfg.Timeout, size: cfg.Size, flush: cfg.Flush,
		in: make(chan entry[T], 256), stop: make(chan struct{}), done: make(chan struct{})}
	go g.run()
	return g
}

// Submit queues v and returns a channel closed once the batch holding it has run.
// Once queued, an item always runs, even when the group closes meanwhile.
func (g *Group[T]) Submit(ctx context.Context, v T) (done <-chan struct{}, err error) {
	e := entry[T]{v: v, done: make(chan struct{})}
	if !g.gate.enter() {
		return nil, ErrClosed
	}
	defer g.gate.leave()
	select {
	case g.in <- e:
		return e.done, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Do queues v and waits until the batch holding it has run.
func (g *Group[T]) Do(ctx context.Context, v T) error {
	done, err := g.Submit(ctx, v)
	if err != nil {
		return err
	}
	<-done
	return nil
}

func (g *Group[T]) run() {
	defer close(g.done)
	var next []entry[T] // an item that did not fit in the last batch
	stopped := false    // closed: run what is queued, without lingering, then return
	for {
		var first entry[T]
		switch {
		case len(next) > 0:
			first = next[0]
		case stopped:
			select {
			case first = <-g.in:
			default:
				return
			}
		default:
			select {
			case first = <-g.in:
			case <-g.stop:
				stopped = true
				continue
			}
		}
		var batch []entry[T]
		batch, next = g.gather(first, !stopped)
		g.exec(batch)
	}
}

// gather collects items after first until the batch is full, nothing more is queued
// or, when linger is set, the linger has passed. An item that would overfill the
// batch is returned in next, to start the next batch.
func (g *Group[T]) gather(first entry[T], linger bool) (batch []entry[T], next []entry[T]) {
	batch = []entry[T]{first}
	total := g.size(first.v)
	var deadline <-chan time.Time
	if linger && g.linger > 0 {
		t := time.NewTimer(g.linger)
		defer t.Stop()
		deadline = t.C
	}
	for total < g.max {
		var e entry[T]
		select {
		case e = <-g.in:
		default:
			if deadline == nil {
				return batch, nil
			}
			select {
			case e = <-g.in:
			case <-deadline:
				return batch, nil
			case <-g.stop:
				return batch, nil
			}
		}
		n := g.size(e.v)
		if total+n > g.max {
			return batch, []entry[T]{e}
		}
		total += n
		batch = append(batch, e)
	}
	return batch, nil
}

func (g *Group[T]) exec(batch []entry[T]) {
	// Every group commits writes that a stage acks its input after: durable. A batch
	// serves many callers, none of whose contexts may end it, so it has its own (the
	// group's life has no caller context before Close: see Close for the last ones).
	base := context.Background()
	select {
	case <-g.stop:
		base = g.drain
	default:
	}
	ctx, cancel := context.WithTimeout(Durable(base), g.timeout)
	defer cancel()
	vs := make([]T, len(batch))
	for i, e := range batch {
		vs[i] = e.v
	}
	g.flush(ctx, vs)
	for _, e := range batch {
		close(e.done)
	}
}

// Close runs what is queued and stops; later submits fail with ErrClosed. The batches
// it runs have ctx's values and end at its deadline (or after the group's Timeout, see
// Cleanup), so a deadline that passes fails them (each item records its failure for its
// caller) instead of leaving Close waiting. It returns the drain's context error when
// that ended before the queue was drained (a batch may have failed for it).
func (g *Group[T]) Close(ctx context.Context) error {
	cancel := context.CancelFunc(nil)
	g.once.Do(func() {
		g.gate.shut()
		g.drain, cancel = Cleanup(ctx, g.timeout)
		close(g.stop)
	})
	<-g.done
	if cancel == nil {
		return nil // closed before
	}
	err := g.drain.Err()
	cancel()
	if err != nil {
		return fmt.Errorf("rkit: close: %w", err)
	}
	return nil
}

// gate admits senders to a queue until it is shut. Once shut returns, no admitted
// sender is still sending, so the queue's final drain sees every item that got in: a
// plain select between "send" and "stopped" can pick the send after the drain, and
// that item's caller then waits forever.
type gate struct {
	mu     sync.RWMutex
	closed bool
}

// enter admits a sender (false once shut); an admitted sender calls leave when done.
func (g *gate) enter() bool {
	g.mu.RLock()
	if g.closed {
		g.mu.RUnlock()
		return false
	}
	return true
}

func (g *gate) leave() { g.mu.RUnlock() }

// shut admits no more senders and waits for the admitted ones to leave.
func (g *gate) shut() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}
