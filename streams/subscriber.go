package streams

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// Defaults of SubscriberConfig (see SubscriberDefaults).
const (
	defaultBatchSize       = 64
	defaultMaxInFlight     = 64
	defaultBlockTime       = 2 * time.Second
	defaultReadLinger      = 20 * time.Millisecond
	defaultAckBatch        = 256
	defaultAckInterval     = 50 * time.Millisecond
	defaultMaxDeliveries   = 5
	defaultRetryBackoff    = time.Second
	defaultMaxRetryBackoff = time.Minute
	defaultMinIdle         = 30 * time.Second
	defaultClaimInterval   = 5 * time.Second
	defaultClaimBatch      = 100
	defaultShutdownTimeout = 20 * time.Second
)

// SubscriberDefaults returns the settings a zero SubscriberConfig gets (for flags and
// messages that show them).
func SubscriberDefaults() SubscriberConfig {
	var c SubscriberConfig
	c.setDefaults()
	return c
}

// SubscriberConfig configures a Subscriber.
type SubscriberConfig struct {
	// Client is the Redis client. The Subscriber never closes it.
	Client redis.UniversalClient
	// Group is the consumer group (the stage name). Required.
	Group string
	// Consumer is this process's name in the group. Keep it stable across restarts of
	// one process slot: a restarted consumer re-reads its own pending entries first.
	Consumer string
	// DeadStream is the dead-letter stream. Default: the dead-letter stream of the
	// partition of each stream read (sc:{tag}:dead for sc:{tag}:requests; the move is one
	// script, so both must share a slot), <stream>:dead for a stream outside a crawl.
	DeadStream string
	// StartID is where a new group starts reading. Default "0" (the whole stream).
	StartID string
	// BatchSize is the COUNT of each XREADGROUP. Default 64.
	BatchSize int
	// MaxInFlight bounds messages handed out and not yet acked or nacked, over every
	// topic the Subscriber reads (a stage reads one stream per partition). Default 64.
	MaxInFlight int
	// BlockTime is how long a read waits for new entries. Default 2s.
	BlockTime time.Duration
	// ReadLinger is how long the reader waits after a read that returned less than half
	// of what it asked for, so that entries gather and the next read takes several at
	// once (each XREADGROUP costs Redis ~15 µs however few entries it returns). It adds
	// at most that much latency per stage; a busy stage also waits up to it for half a
	// batch of slots to free up before reading. Default 20ms; negative disables it.
	ReadLinger time.Duration
	// AckBatch is the most IDs sent in one XACK. Default 256.
	AckBatch int
	// AckInterval is how long an ack may wait for others to share its XACK. Default 50ms.
	AckInterval time.Duration
	// MaxDeliveries is how many deliveries an entry gets before it becomes a dead letter.
	// Default 5.
	MaxDeliveries int
	// RetryBackoff is the wait before redelivering a nacked entry, doubled per delivery
	// up to MaxRetryBackoff. Defaults 1s and 1m.
	RetryBackoff, MaxRetryBackoff time.Duration
	// MinIdle is how long an entry must sit unacked with another consumer before this one
	// takes it over (XAUTOCLAIM). Live consumers refresh their entries every MinIdle/3;
	// one of its own entries that a stall let go idle is claimed back but not handed out
	// again while it is still in flight or its ack waits to be sent. Default 30s.
	MinIdle time.Duration
	// ClaimInterval is how often idle entries are looked for. Default 5s.
	ClaimInterval time.Duration
	// ClaimBatch is the COUNT of each XAUTOCLAIM. Default 100.
	ClaimBatch int
	// ShutdownTimeout bounds how long Close waits for in-flight messages. Default 20s.
	ShutdownTimeout time.Duration
	// Logger; nil means no-op.
	Logger *zap.Logger
	// Gate, when set, is asked before each read of new entries; while it says no, the
	// subscriber reads nothing new (backpressure: a fetcher waits while the parse stage
	// is far behind). Entries already read and redeliveries are not held back.
	Gate func() bool
	// Outage, when set, is shared by the process's stages: while Redis refuses writes the
	// subscriber reads nothing new, and it ends when a held message goes through. A
	// message failed with an outage (Fail) is always held (no delivery counted, never a dead
	// letter) and handed out again with a growing wait, or as soon as the outage ends.
	Outage *Outage
	// BeforeAck, when set, is called for each acked message just before its ID is queued
	// for XACK: a fault hook for tests that kill a process between a stage's output
	// landing in Redis and its input being acked.
	BeforeAck func(msg *message.Message)
	// OnEvent, when set, is told of n entries of Group that went to dead letters
	// (event "dead_letter") or were taken over from idle consumers ("reclaimed"): a
	// hook for metrics. It must not block.
	OnEvent func(group, event string, n int64)
	// CheckState, when set, is asked before a group found missing is created again: an
	// error (the crawl's state is lost, see StateWatch.Check) leaves it missing.
	CheckState func(ctx context.Context) error
}

// checkState is CheckState, or nil when none is set.
func (c *SubscriberConfig) checkState(ctx context.Context) error {
	if c.CheckState == nil {
		return nil
	}
	return c.CheckState(ctx)
}

// event reports n events to OnEvent, if set.
func (c *SubscriberConfig) event(event string, n int64) {
	if c.OnEvent != nil && n > 0 {
		c.OnEvent(c.Group, event, n)
	}
}

func (c *SubscriberConfig) setDefaults() {
	if c.StartID == "" {
		c.StartID = "0"
	}
	c.BatchSize = cmp.Or(c.BatchSize, defaultBatchSize)
	c.MaxInFlight = cmp.Or(c.MaxInFlight, defaultMaxInFlight)
	c.BlockTime = cmp.Or(c.BlockTime, defaultBlockTime)
	c.ReadLinger = cmp.Or(c.ReadLinger, defaultReadLinger)
	c.AckBatch = cmp.Or(c.AckBatch, defaultAckBatch)
	c.AckInterval = cmp.Or(c.AckInterval, defaultAckInterval)
	c.MaxDeliveries = cmp.Or(c.MaxDeliveries, defaultMaxDeliveries)
	c.RetryBackoff = cmp.Or(c.RetryBackoff, defaultRetryBackoff)
	c.MaxRetryBackoff = cmp.Or(c.MaxRetryBackoff, defaultMaxRetryBackoff)
	c.MinIdle = cmp.Or(c.MinIdle, defaultMinIdle)
	c.ClaimInterval = cmp.Or(c.ClaimInterval, defaultClaimInterval)
	c.ClaimBatch = cmp.Or(c.ClaimBatch, defaultClaimBatch)
	c.ShutdownTimeout = cmp.Or(c.ShutdownTimeout, defaultShutdownTimeout)
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
}

// validate reports a config that cannot work.
func (c *SubscriberConfig) validate() error {
	switch {
	case c.Client == nil:
		return errors.New("streams: subscriber needs a redis client")
	case c.Group == "":
		return errors.New("streams: subscriber needs a consumer group")
	case c.Consumer == "":
		return errors.New("streams: subscriber needs a consumer name")
	case c.BatchSize > c.MaxInFlight:
		return fmt.Errorf("streams: batch size %d exceeds max in flight %d", c.BatchSize, c.MaxInFlight)
	}
	return nil
}

// Subscriber reads a stream in a consumer group and implements Watermill's
// message.Subscriber. Unlike watermill-redisstream it reads up to BatchSize entries per
// XREADGROUP, keeps up to MaxInFlight messages out at once, acks in batches, re-reads its
// own pending entries at start, takes over idle entries of dead consumers with
// XAUTOCLAIM, and never loops on a Nack: a nacked entry is redelivered after a backoff
// through XCLAIM (so Redis counts the delivery) and becomes a dead letter after
// MaxDeliveries. Entries that cannot be decoded become dead letters at once.
//
// Contract: every message must be Acked or Nacked. Ack is owed only after the handler's
// output is in Redis; the XACK itself may follow a few milliseconds later, batched.
type Subscriber struct {
	cfg   SubscriberConfig
	log   *zap.Logger
	slots chan struct{} // one token per message in flight, shared by the topics

	mu     sync.Mutex
	subs   []*subscription
	closed bool
}

// NewSubscriber validates cfg and returns a Subscriber.
func NewSubscriber(cfg SubscriberConfig) (*Subscriber, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger.With(zap.String("group", cfg.Group))
	return &Subscriber{cfg: cfg, log: log, slots: make(chan struct{}, cfg.MaxInFlight)}, nil
}

// ErrNothingMore is the cause (context.WithCancelCause) to end a subscription's
// context with when nothing more can arrive on its streams, as when the crawl is done:
// it then stops without waiting up to BlockTime for a read blocked in Redis. Any other
// end of the context is a stop mid-crawl, which waits for that read and hands out what
// it returns, so that a graceful stop leaves no entry pending.
var ErrNothingMore = errors.New("streams: nothing more to read")

// Subscribe starts reading stream topic. The channel is closed after ctx ends or Close
// is called and every message handed out has been acked, nacked or abandoned after the
// shutdown timeout.
func (s *Subscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, rkit.ErrClosed
	}
	if err := ensureGroup(ctx, s.cfg.Client, topic, s.cfg.Group, s.cfg.StartID); err != nil {
		return nil, err
	}
	sub := newSubscription(ctx, s.cfg, topic, s.slots, s.log.With(zap.String("stream", topic)))
	s.subs = append(s.subs, sub)
	sub.start()
	return sub.out, nil
}

// Close stops reading, waits for in-flight messages (up to the shutdown timeout),
// flushes acks (for a few seconds at most) and returns the error of acks it could not
// send: their entries stay pending and are delivered again. It does not close the Redis
// client. It takes no context, as Watermill's message.Subscriber has it: the
// subscriber's own timeouts (SubscriberConfig.ShutdownTimeout, 5s for the acks) bound it.
func (s *Subscriber) Close() error {
	s.mu.Lock()
	s.closed = true
	subs := s.subs
	s.mu.Unlock()
	var errs []error
	for _, sub := range subs {
		errs = append(errs, sub.close())
	}
	return errors.Join(errs...)
}

// ensureGroup creates group on stream (and the stream) if missing.
func ensureGroup(ctx context.Context, rdb redis.UniversalClient, stream, group, start string) error {
	err := rdb.XGroupCreateMkStream(ctx, stream, group, start).Err()
	if err != nil && !strings.HasPrefix(err.Error(), "BUSYGROUP") {
		return fmt.Errorf("streams: create group %s on %s: %w", group, stream, err)
	}
	return nil
}
