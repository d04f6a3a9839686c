package handlers

import (
	"fmt"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/loop"
)

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
				if err == nil {
					return
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
