package handlers

import (
	"errors"
	"fmt"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/streams"
)

// recordFailures turns a handler's panic into an error, logs failures at a bounded rate,
// and records the error on the message so that a dead letter carries it; errors that no
// retry can fix mark the message poison (dead letters at once); writes that Redis refused
// for its own reasons (out of memory, ...) mark it held for the outage, recorded in
// outage (which logs it once): no delivery counted, no dead letter.
func recordFailures(log *zap.Logger, outage *streams.Outage) message.HandlerMiddleware {
	limiter := newLogLimiter(log, time.Second, 20)
	return func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) (out []*message.Message, err error) {
			defer func() {
				if r := recover(); r != nil {
					out, err = nil, fmt.Errorf("handlers: panic: %v", r)
				}
				if err == nil {
					return
				}
				if outage.Refused(err) {
					streams.MarkOutage(msg, err)
					return
				}
				if errors.Is(err, streams.ErrPoison) {
					streams.MarkPoison(msg, err) // the subscriber logs its move to dead letters
					return
				}
				streams.RecordError(msg, err)
				limiter.warn("handler failed", zap.Error(err), zap.String("id", msg.Metadata.Get(streams.MetaStreamID)),
					zap.String("deliveries", msg.Metadata.Get(streams.MetaDeliveries)))
			}()
			return h(msg)
		}
	}
}

// logLimiter logs at most n messages per interval and counts the rest.
type logLimiter struct {
	log      *zap.Logger
	interval time.Duration
	n        int
	ch       chan struct{}
}

func newLogLimiter(log *zap.Logger, interval time.Duration, n int) *logLimiter {
	return &logLimiter{log: log, interval: interval, n: n, ch: make(chan struct{}, n)}
}

func (l *logLimiter) warn(msg string, fields ...zap.Field) {
	if l == nil {
		return
	}
	select {
	case l.ch <- struct{}{}:
		l.log.Warn(msg, fields...)
		time.AfterFunc(l.interval, func() { <-l.ch })
	default:
	}
}
