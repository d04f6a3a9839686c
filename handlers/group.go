package handlers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/handlers/metrics"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/loop"
)

// groupConfig runs one handler over a stream in a consumer group of its own: a
// post-processor joining the items stream, or a replay of a stage.
type groupConfig struct {
	Client redis.UniversalClient
	// Streams to read (one per partition of the crawl) in Group; the group is created at
	// StartID when missing.
	Streams        []string
	Group, StartID string
	// Consumer names this process in the group. Default host-pid.
	Consumer string
	// Handle processes one message; it must be done with it (output in Redis or in the
	// sink) when it returns nil.
	Handle message.NoPublishHandlerFunc
	// Concurrency is the number of messages in flight. Default 64.
	Concurrency int
	// Until, when set, is checked every PollInterval; Run returns once it is true.
	Until func(ctx context.Context) (bool, error)
	// PollInterval default 250ms.
	PollInterval time.Duration
	// Subscriber tunes the subscriber (Client, Group, Consumer and the dead-letter
	// streams are set: entries that fail too often go to their partition's).
	Subscriber streams.SubscriberConfig
	Logger     *zap.Logger
	// BeforeAck is the test fault hook (see streams.SubscriberConfig.BeforeAck).
	BeforeAck func(msg *message.Message)
	// Metrics, when set, counts the group's messages, dead letters and reclaims.
	Metrics *metrics.Metrics
	// Background components run beside the group until it stops; one that stops with an
	// error ends the group with that error.
	Background []component
}

// runGroup runs cfg until ctx ends or Until says so, with the same at-least-once, reclaim
// and dead-letter behaviour as the stages, then shuts down in order.
func runGroup(ctx context.Context, cfg groupConfig) error {
	if cfg.Client == nil || cfg.Handle == nil || len(cfg.Streams) == 0 || cfg.Group == "" {
		return errors.New("handlers: a group run needs a client, a stream, a group and a handler")
	}
	base := runConfig{Options: Options{Consumer: cfg.Consumer, PollInterval: cfg.PollInterval, Logger: cfg.Logger}}
	base.setBasicDefaults()
	if cfg.Concurrency == 0 {
		cfg.Concurrency = 64
	}
	log := base.Logger.With(zap.String("group", cfg.Group), zap.String("consumer", base.Consumer))
	scfg := cfg.Subscriber
	scfg.Client, scfg.Group, scfg.Consumer, scfg.Logger = cfg.Client, cfg.Group, base.Consumer, log
	scfg.StartID, scfg.MaxInFlight, scfg.BeforeAck = cfg.StartID, cfg.Concurrency, cfg.BeforeAck
	if cfg.Metrics != nil {
		scfg.OnEvent = cfg.Metrics.SubscriberEvent
	}
	if scfg.Outage == nil {
		scfg.Outage = &streams.Outage{Logger: log}
	}
	sub, err := newStageSubscriber(scfg)
	if err != nil {
		return err
	}
	router, err := newRouter(scfg.ShutdownTimeout, cfg.Metrics, log, scfg.Outage)
	if err != nil {
		return err
	}
	for i, stream := range cfg.Streams {
		router.AddConsumerHandler(handlerName(cfg.Group, i, len(cfg.Streams)), stream, sub, cfg.Handle)
	}
	runCtx, cancelCause := context.WithCancelCause(ctx)
	cancel := func() { cancelCause(nil) }
	defer cancel()
	bg := &background{stop: cancel, log: log}
	if cfg.Until != nil {
		// Done: nothing more comes, and the subscriber need not wait for its blocked reads.
		done := func() { cancelCause(streams.ErrNothingMore) }
		bg.start(runCtx, &untilWatch{until: cfg.Until, interval: base.PollInterval, log: log, stop: done})
	}
	bg.start(runCtx, cfg.Background...)
	err = router.Run(runCtx)
	cancel()
	bgErr := bg.wait()
	if err != nil {
		return fmt.Errorf("handlers: %w", err)
	}
	return bgErr
}

// untilWatch ends a group's run (stop) once until says it is done.
type untilWatch struct {
	until    func(ctx context.Context) (bool, error)
	interval time.Duration
	log      *zap.Logger
	stop     func()
}

// Run looks every interval until ctx ends or until is true, then returns nil.
func (u *untilWatch) Run(ctx context.Context) error {
	return loop.Every(ctx, u.interval, loop.Config{}, func(ctx context.Context) error {
		if ok, err := u.until(ctx); err == nil && ok {
			u.log.Info("group done")
			u.stop()
			return loop.Stop(nil)
		}
		return nil // not there yet, or cannot tell: look again
	})
}
