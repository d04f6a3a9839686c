package handlers

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"go.uber.org/zap"
)

// component is a long-running part of a run beside its router (dispatcher, delayed
// mover, seed poller, backlog watch, trimmer, wait log, archive uploader): it works
// until ctx ends and returns nil then. An error means it stopped early.
type component interface {
	Run(ctx context.Context) error
}

// background runs a run's components beside its router. A component that stops early
// with an error other than its context's ends the run: it is logged, stop is called,
// and wait returns the error (the first, when several stop).
type background struct {
	stop context.CancelFunc // ends the run
	log  *zap.Logger
	wg   sync.WaitGroup

	mu  sync.Mutex
	err error
}

// start runs each of cs until ctx ends.
func (b *background) start(ctx context.Context, cs ...component) {
	for _, c := range cs {
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			err := c.Run(ctx)
			if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return
			}
			b.log.Error("a component stopped; the run stops with it", zap.String("component", fmt.Sprintf("%T", c)), zap.Error(err))
			b.mu.Lock()
			if b.err == nil {
				b.err = err
			}
			b.mu.Unlock()
			b.stop()
		}()
	}
}

// wait waits until every component has returned and returns the first error.
func (b *background) wait() error {
	b.wg.Wait()
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}
