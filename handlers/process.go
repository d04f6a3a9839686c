package handlers

import (
	"context"
	"errors"
	"time"

	"github.com/streamcrawl/streamcrawl/streams/frontier"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/handlers/metrics"
	"github.com/streamcrawl/streamcrawl/processors"
	"github.com/streamcrawl/streamcrawl/streams"
)

// ProcessConfig runs a post-processor: a consumer group of its own on the crawl's items
// stream. Every group sees every item; processes in one group share the work.
type ProcessConfig struct {
	Client redis.UniversalClient
	Crawl  string
	// Group names the post-processor; not fetch, parse or store.
	Group string
	// From is where a new group starts (streams.ParsePosition); default the beginning.
	From string
	// Processors run on each item, in order, before Sink. Process closes Sink.
	Processors processors.Chain
	Sink       processors.Sink
	// UntilDone returns once the crawl is done and this group has handled every item.
	UntilDone  bool
	Consumer   string
	Subscriber streams.SubscriberConfig
	Logger     *zap.Logger
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
		return streams.ErrStageGroup
	}
	if cfg.Sink == nil {
		return errors.New("handlers: a post-processor needs a sink")
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if cerr := cfg.Sink.Close(cctx); cerr != nil && err == nil {
			err = cerr
		}
	}()
	layout, err := frontier.ReadLayout(ctx, cfg.Client, cfg.Crawl)
	if err != nil {
		return err
	}
	keys := layout.Global()
	var items []string
	for _, k := range layout.Parts() {
		items = append(items, k.Items())
	}
	start, err := streams.ParsePosition(cfg.From, time.Now())
	if err != nil {
		return err
	}
	if start != "$" {
		start = streams.Before(start)
	}
	counters := streams.NewCounters(cfg.Client, keys.Stats(), streams.DefaultCountersInterval)
	defer counters.Close()
	store, err := NewStore(cfg.Sink, cfg.Processors, nil)
	if err != nil {
		return err
	}
	if cfg.Metrics != nil {
		store.stored = cfg.Metrics.ItemStored
	}
	var until func(ctx context.Context) (bool, error)
	if cfg.UntilDone {
		until = func(ctx context.Context) (bool, error) {
			p, err := frontier.ReadProgress(ctx, cfg.Client, layout)
			if err != nil || !p.Done() {
				return false, err
			}
			for _, stream := range items {
				st, err := streams.ReadGroupState(ctx, cfg.Client, stream, cfg.Group)
				if err != nil || !st.Exists || st.Pending > 0 || st.Unread() {
					return false, err
				}
			}
			return true, nil
		}
	}
	return RunGroup(ctx, GroupConfig{Client: cfg.Client, Streams: items, Group: cfg.Group, StartID: start,
		Consumer: cfg.Consumer, Handle: store.Handle, Until: until, Subscriber: cfg.Subscriber,
		Logger: cfg.Logger, BeforeAck: cfg.BeforeAck, Metrics: cfg.Metrics})
}
