package loop

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"
)

// defaultLogEvery is how often a recurring failure is logged at most.
const defaultLogEvery = 5 * time.Second

// Stop, returned by a task, ends the loop: Every and Paced return err (nil for
// Stop(nil)).
func Stop(err error) error { return stopError{err} }

type stopError struct{ err error }

func (s stopError) Error() string {
	if s.err == nil {
		return "loop: stop"
	}
	return s.err.Error()
}

// Config says how a periodic task is run and its failures logged.
type Config struct {
	// Log receives failures; nil means no-op.
	Log *zap.Logger
	// Msg is the message failures are logged with ("dispatch failed; retrying").
	Msg string
	// LogEvery is how often a recurring failure is logged at most. Default
	// 5s.
	LogEvery time.Duration
	// Now runs the task once at once, before the first tick.
	Now bool
	// Wake, when set, is asked before each wait for a channel that starts the next
	// round early when it is closed or sent on (nil: wait the whole interval).
	Wake func() <-chan struct{}
}

// Every runs task every interval until ctx ends, then returns nil. A round that fails
// while ctx is live is logged through cfg (rate-limited) and the task runs again on
// the next tick.
func Every(ctx context.Context, interval time.Duration, cfg Config, task func(ctx context.Context) error) error {
	return Paced(ctx, interval, cfg, func(ctx context.Context) (time.Duration, error) {
		return interval, task(ctx)
	})
}

// Paced is Every for a task that picks the wait before its next round (a dispatcher
// that slows down while there is nothing to do): the first round runs after first
// (at once with cfg.Now), each next one after the wait the previous round returned.
func Paced(ctx context.Context, first time.Duration, cfg Config, task func(ctx context.Context) (time.Duration, error)) error {
	if first <= 0 {
		return errors.New("loop: the interval must be positive")
	}
	if cfg.LogEvery == 0 {
		cfg.LogEvery = defaultLogEvery
	}
	if cfg.Msg == "" {
		cfg.Msg = "periodic task failed; retrying"
	}
	errs := NewErrors(cfg.Log, cfg.LogEvery)
	wait := first
	if cfg.Now {
		wait = 0
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		var wake <-chan struct{}
		if cfg.Wake != nil {
			wake = cfg.Wake()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-wake:
		}
		next, err := task(ctx)
		var stop stopError
		if errors.As(err, &stop) {
			return stop.err
		}
		if err != nil && ctx.Err() == nil {
			errs.Warn(cfg.Msg, err)
		}
		if next <= 0 {
			next = first
		}
		t.Reset(next)
	}
}
