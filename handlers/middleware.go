package handlers

import (
	"errors"
	"fmt"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/handlers/metrics"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/loop"
)

// newRouter returns the router of a run or a group: it waits for its handlers up to
// the subscriber's shutdown timeout and the sink's 10 s, counts messages in m (when set;
// outermost, so that it sees recovered panics as errors) and records failures
// (recordFailures).
func newRouter(shutdownTimeout time.Duration, m *metrics.Metrics, log *zap.Logger, outage *streams.Outage) (*message.Router, error) {
	router, err := message.NewRouter(message.RouterConfig{CloseTimeout: shutdownTimeout + 10*time.Second}, newZapAdapter(log))
	if err != nil {
		return nil, fmt.Errorf("handlers: router: %w", err)
	}
	if m != nil {
		router.AddMiddleware(m.Middleware)
	}
	router.AddMiddleware(recordFailures(log, outage))
	return router, nil
}

// recordFailures turns a handler's panic into an error, logs failures at most once a
// second (loop.Errors, with the number not logged since),
// and records the error on the message so that a dead letter carries it; errors that no
// retry can fix mark the message poison (dead letters at once); writes that Redis refused
// for its own reasons (out of memory, ...) mark it held for the outage, recorded in
// outage (which logs it once): no delivery counted, no dead letter.
func recordFailures(log *zap.Logger, outage *streams.Outage) message.HandlerMiddleware {
	failures := loop.NewErrors(log, time.Second)
	return func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) (out []*message.Message, err error) {
			defer func() {
				if r := recover(); r != nil {
					out, err = nil, fmt.Errorf("handlers: panic: %v", r)
				}
				if err == nil || errors.Is(err, streams.ErrNotHeld) {
					return // not ours any more: the subscription drops it (one log line per takeover)
				}
				if !streams.Fail(msg, err, outage) {
					return // held for the outage (logged there), or poison (the subscriber logs it)
				}
				failures.Warn("handler failed", err, zap.String("id", msg.Metadata.Get(streams.MetaStreamID)),
					zap.String("deliveries", msg.Metadata.Get(streams.MetaDeliveries)))
			}()
			return h(msg)
		}
	}
}
