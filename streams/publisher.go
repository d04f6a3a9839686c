package streams

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
)

// Publisher appends messages to streams and implements Watermill's message.Publisher.
// Concurrent Publish calls share pipelined round trips (group commit); each call returns
// only after Redis has every message of the call. It never trims: trimming is the
// trimmer's job, which knows what every group has acked.
type Publisher struct {
	b      *rkit.Pipeline
	outage *Outage
	stop   chan struct{}
	once   sync.Once
}

// NewPublisher returns a Publisher on rdb. It does not own rdb. With an outage o it waits
// out writes that Redis refuses for its own reasons (out of memory, read-only, see
// Fail): each refused message is sent again with a growing wait until Redis takes it,
// ctx ends or Shutdown is called, and o records the outage, so that a fetch stage never
// fetches a page again because Redis was full when its response was ready. Without one
// (nil) a refusal is the caller's error.
func NewPublisher(rdb redis.UniversalClient, o *Outage) (*Publisher, error) {
	if rdb == nil {
		return nil, errors.New("streams: publisher needs a redis client")
	}
	return &Publisher{b: rkit.NewPipeline(rdb, 256, rkit.WriteTimeout, rkit.WriteLinger), outage: o, stop: make(chan struct{})}, nil
}

// Publish appends msgs to stream topic and returns once all are in Redis. It has no
// context (Watermill's message.Publisher): the wait for a place in a batch is unbounded
// (a batch is bounded by rkit.WriteTimeout); PublishContext takes one.
func (p *Publisher) Publish(topic string, msgs ...*message.Message) error {
	return p.PublishContext(context.Background(), topic, msgs...)
}

// PublishContext is Publish with a context that bounds the wait for a place in a batch.
func (p *Publisher) PublishContext(ctx context.Context, topic string, msgs ...*message.Message) error {
	all := make([]map[string]any, 0, len(msgs))
	for _, msg := range msgs {
		values, err := encode(msg)
		if err != nil {
			return err
		}
		all = append(all, values)
	}
	for attempt := 0; ; attempt++ {
		refused, err := p.send(ctx, topic, all)
		if len(refused) == 0 || p.outage == nil {
			if err == nil && attempt > 0 {
				p.outage.accepted()
			}
			return err
		}
		p.outage.refused(err)
		t := time.NewTimer(outageBackoff(attempt))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w: %w", err, ctx.Err())
		case <-p.stop:
			t.Stop()
			return err
		}
		all = refused
	}
}

// send appends every entry of all to topic in shared pipelines. It returns the entries
// Redis refused for its own reasons (errWriteRefused: not written, safe to send again)
// with the first refusal, or any other error alone.
func (p *Publisher) send(ctx context.Context, topic string, all []map[string]any) (refused []map[string]any, first error) {
	calls := make([]*rkit.Call, 0, len(all))
	waits := make([]<-chan struct{}, 0, len(all))
	for _, values := range all {
		c := &rkit.Call{Add: func(ctx context.Context, pipe redis.Pipeliner) redis.Cmder {
			return pipe.XAdd(ctx, &redis.XAddArgs{Stream: topic, Values: values})
		}}
		done, err := p.b.Submit(ctx, c)
		if err != nil {
			return nil, err
		}
		calls, waits = append(calls, c), append(waits, done)
	}
	var other error
	for i, c := range calls {
		<-waits[i]
		switch err := c.Reply.Err(); {
		case err == nil:
		case isWriteRefused(err):
			refused = append(refused, all[i])
			if first == nil {
				first = err
			}
		case other == nil:
			other = err
		}
	}
	if other != nil {
		return nil, other // not an outage: the caller's delivery retry decides
	}
	return refused, first
}

// Close is a no-op, there for Watermill's message.Publisher (whose Close takes no
// context): the Watermill router closes publishers while handlers may still be
// publishing, so the owner calls Shutdown after the router has stopped.
func (p *Publisher) Close() error { return nil }

// Shutdown sends what is queued and stops the publisher: later publishes fail with a
// closed error, and a publish waiting out an outage gives up. ctx's deadline (or
// rkit.WriteTimeout, when it has none) bounds the last round trips, which run even when
// ctx was cancelled; it returns an error when that bound passed first (the publishes
// those round trips carried fail). It is the publisher's Close(ctx) of the other
// components, under another name because Watermill's interface takes Close() error;
// like http.Server's Shutdown(ctx) beside Close().
func (p *Publisher) Shutdown(ctx context.Context) error {
	p.once.Do(func() { close(p.stop) })
	if err := p.b.Close(ctx); err != nil {
		return fmt.Errorf("streams: publisher: %w", err)
	}
	return nil
}
