package handlers

import (
	"context"
	"errors"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/handlers/metrics"
	"github.com/streamcrawl/streamcrawl/processors"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// ProcessConfig runs a post-processor: a consumer group of its own on the crawl's items
// stream. Every group sees every item; processes in one group share the work.
type ProcessConfig struct {
	// Client is the Redis client; Process does not close it.
	Client redis.UniversalClient
	// Crawl names the crawl.
	Crawl string
	// Group names the post-processor; not fetch, parse or store.
	Group string
	// From is where a new group starts (inspect.ParsePosition); default the beginning.
	From string
	// Processors run on each item, in order, before Sink.
	Processors processors.Chain
	// Sink receives the items; required. Process closes it.
	Sink processors.Sink
	// UntilDone returns once the crawl is done and this group has handled every item.
	UntilDone bool
	// Consumer names this process in the group. Default host-pid.
	Consumer string
	// Subscriber tunes the group's subscriber (its Client, Group and Consumer are set).
	Subscriber streams.SubscriberConfig
	// Logger; nil means no-op.
	Logger *zap.Logger
	// BeforeAck is the test fault hook (see streams.SubscriberConfig.BeforeAck).
	BeforeAck func(msg *message.Message)
	// Metrics, when set, counts the group's messages, dead letters and reclaims.
	Metrics *metrics.Metrics
}

// Process runs the post-processor until ctx ends (or, with UntilDone, until the crawl
// and this group are done). It does not hold the crawl open: the crawl's "done" looks
// only at its own stage groups.
func Process(ctx context.Context, cfg ProcessConfig) (err error) {
	if cfg.Group == streams.StageFetch || cfg.Group == streams.StageParse || cfg.Group == streams.StageStore {
		return inspect.ErrStageGroup
	}
	if cfg.Sink == nil {
		return errors.New("handlers: a post-processor needs a sink")
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	defer closeSink(ctx, cfg.Sink, &err)
	layout, err := streams.ReadLayout(ctx, cfg.Client, cfg.Crawl)
	if err != nil {
		return err
	}
	keys := layout.Global
	var items []string
	for _, k := range layout.Parts {
		items = append(items, k.Items)
	}
	start, err := inspect.GroupStart(cfg.From, time.Now())
	if err != nil {
		return err
	}
	counters := streams.NewCounters(ctx, cfg.Client, keys.Stats, 0, nil)
	defer closeLogged(ctx, cfg.Logger, counters.Close)
	store, err := newStorer(cfg.Sink, cfg.Processors, nil)
	if err != nil {
		return err
	}
	if cfg.Metrics != nil {
		store.stored = cfg.Metrics.ItemStored
	}
	var until func(ctx context.Context) (bool, error)
	if cfg.UntilDone {
		until = func(ctx context.Context) (bool, error) {
			return groupDone(ctx, cfg.Client, layout, cfg.Group, items)
		}
	}
	return runGroup(ctx, groupConfig{Client: cfg.Client, Streams: items, Group: cfg.Group, StartID: start,
		Consumer: cfg.Consumer, Handle: store.handle, Until: until, Subscriber: cfg.Subscriber,
		Logger: cfg.Logger, BeforeAck: cfg.BeforeAck, Metrics: cfg.Metrics})
}
