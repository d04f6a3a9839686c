package handlers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/streamcrawl/streamcrawl/streams/frontier"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/handlers/metrics"
	"github.com/streamcrawl/streamcrawl/processors"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
)

// DefaultMaxBacklog is the default bound on responses waiting for the parse stage
// (about 5 KB each in Redis when compressed).
const DefaultMaxBacklog = 5000

// sinkCloseTimeout bounds the flush of a sink when a run stops.
const sinkCloseTimeout = 10 * time.Second

// DefaultSeedPoll is how often fetch processes look for seeds pushed at runtime.
const DefaultSeedPoll = 200 * time.Millisecond

// Config says which stages a process runs and how.
type Config struct {
	// Client is the Redis client; Run does not close it.
	Client redis.UniversalClient
	// Spider is the crawl's spider.
	Spider *spiders.Spider
	// Stages to run: any of streams.StageFetch, StageParse, StageStore.
	Stages []string
	// Sink receives items in the store stage; Run closes it when it stops.
	Sink processors.Sink
	// Processors run on each item in the store stage, in order, before the sink.
	Processors processors.Chain
	// Consumer names this process in the stage groups. Keep it stable for one process
	// slot (a restart re-reads its own pending entries). Default host-pid.
	Consumer string
	// UntilDone makes Run return once the whole crawl is done.
	UntilDone bool
	// PollInterval is how often "done" is checked and progress logged. Default 250ms.
	PollInterval time.Duration
	// ParseConcurrency is the number of responses in the parse stage at once (parsing, or
	// waiting for Redis to take the page's output). Default 16×GOMAXPROCS.
	ParseConcurrency int
	// StoreConcurrency is the number of items in flight to the sink. Default 256.
	StoreConcurrency int
	// Retain says what each stream keeps after every group has acked it (for replay),
	// by stage of its reading group. Missing stages get the spider's
	// settings.retention, or its defaults (requests and responses nothing, items a day
	// up to 16 MB).
	Retain map[string]streams.Retention
	// TrimInterval is how often this process trims its stages' input streams.
	// Default streams.DefaultTrimInterval.
	TrimInterval time.Duration
	// CountUnread makes the dispatcher count unread requests with XRANGE instead of
	// trusting XINFO's lag; set it for the embedded Redis.
	CountUnread bool
	// MaxBacklog pauses the fetch stage while the parse stage has more than this many
	// responses unread or pending, which bounds the responses stream. Default
	// DefaultMaxBacklog; negative: no bound.
	MaxBacklog int64
	// RetryBase is the delay before a failed fetch's first retry (doubled per retry).
	// Default DefaultRetryBase.
	RetryBase time.Duration
	// RobotsRetry is how long a robots.txt answering 5xx keeps its host disallowed
	// before it is fetched again. Default DefaultRobotsRetry.
	RobotsRetry time.Duration
	// Subscriber tunes every stage's subscriber (Group, Consumer, DeadStream, Client and
	// MaxInFlight are set by Run).
	Subscriber streams.SubscriberConfig
	// Logger; nil means no-op.
	Logger *zap.Logger
	// BeforeAck is a fault hook for tests (see streams.SubscriberConfig.BeforeAck), called
	// with the stage name.
	BeforeAck func(stage string, msg *message.Message)
	// Metrics, when set, receives the process's figures (stage messages, fetch outcomes
	// and latency, items stored, dead letters, reclaims). Run does not serve them.
	Metrics *metrics.Metrics
}

// setBasicDefaults sets the defaults every kind of run shares.
func (c *Config) setBasicDefaults() {
	if c.Consumer == "" {
		host, _ := os.Hostname()
		c.Consumer = host + "-" + strconv.Itoa(os.Getpid())
	}
	if c.PollInterval == 0 {
		c.PollInterval = 250 * time.Millisecond
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
}

func (c *Config) setDefaults() {
	c.setBasicDefaults()
	if c.ParseConcurrency == 0 {
		c.ParseConcurrency = 16 * runtime.GOMAXPROCS(0)
	}
	if c.StoreConcurrency == 0 {
		c.StoreConcurrency = 256
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	if c.MaxBacklog == 0 {
		c.MaxBacklog = DefaultMaxBacklog
	}
	if c.TrimInterval == 0 {
		c.TrimInterval = streams.DefaultTrimInterval
	}
	// A copy: the caller's spider may serve other runs at the same time.
	sp := *c.Spider
	sp.Settings.SetDefaults()
	c.Spider = &sp
	retain := map[string]streams.Retention{}
	for kind, r := range sp.Settings.EffectiveRetention() {
		retain[stageOfStream[kind]] = streams.Retention{Age: r.MaxAge, MaxBytes: int64(r.MaxBytes)}
	}
	for k, v := range c.Retain {
		retain[k] = v
	}
	c.Retain = retain
}

// stageOfStream names the stage whose group reads each kind of stream.
var stageOfStream = map[string]string{"requests": streams.StageFetch, "responses": streams.StageParse, "items": streams.StageStore}

// Run runs the configured stages until ctx ends (or, with UntilDone, until the crawl is
// done), then shuts down in order: stop reading, let in-flight messages finish (up to the
// subscriber's shutdown timeout), ack them, flush publishers, counters and the sink.
func Run(ctx context.Context, cfg Config) (err error) {
	if cfg.Sink != nil {
		defer closeSink(ctx, cfg.Sink, &err) // last, after everything that feeds it
	}
	if cfg.Client == nil || cfg.Spider == nil {
		return errors.New("handlers: run needs a redis client and a spider")
	}
	if len(cfg.Stages) == 0 {
		return errors.New("handlers: no stage to run")
	}
	cfg.setDefaults()
	log := cfg.Logger.With(zap.String("crawl", cfg.Spider.Name), zap.String("consumer", cfg.Consumer))
	layout, err := OpenLayout(ctx, cfg.Client, cfg.Spider, log)
	if err != nil {
		return err
	}
	keys := layout.Global()
	if err := frontier.CheckSeedKey(ctx, cfg.Client, cfg.Spider.Name); err != nil {
		return err
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var background sync.WaitGroup // goroutines beside the router, stopped before cleanup
	defer background.Wait()
	defer cancel()

	counters := streams.NewCounters(cfg.Client, keys.Stats(), streams.DefaultCountersInterval)
	waits := &waitLog{log: log}
	counters.Observe(func(field string, n int64) {
		waits.count(field, n)
		cfg.Metrics.Count(field, n) // a nil Metrics does nothing
	})
	pub, err := streams.NewPublisher(cfg.Client)
	if err != nil {
		return err
	}
	// One outage state per process: a stage that finds Redis refusing writes stops every
	// stage's reading, and the crawl is not done while it lasts.
	outage := streams.NewOutage(log, counters)
	pub.HoldOnRefusal(outage)
	var fr *frontier.Frontier
	defer func() {
		pub.Shutdown()
		if fr != nil {
			fr.Close()
		}
		counters.Close()
	}()

	router, err := message.NewRouter(message.RouterConfig{
		CloseTimeout: cfg.Subscriber.ShutdownTimeout + 10*time.Second,
	}, newZapAdapter(log))
	if err != nil {
		return fmt.Errorf("handlers: router: %w", err)
	}
	if cfg.Metrics != nil {
		router.AddMiddleware(cfg.Metrics.Middleware) // outermost: sees recovered panics as errors
	}
	router.AddMiddleware(recordFailures(log, outage))

	for _, stage := range cfg.Stages {
		slog := cfg.Logger.With(zap.String("crawl", cfg.Spider.Name), zap.String("consumer", cfg.Consumer))
		scfg := cfg.Subscriber
		scfg.Client, scfg.Group, scfg.Consumer, scfg.DeadStreamFor, scfg.Logger, scfg.Outage =
			cfg.Client, stage, cfg.Consumer, frontier.DeadOf, slog, outage
		if cfg.BeforeAck != nil {
			hook, st := cfg.BeforeAck, stage
			scfg.BeforeAck = func(m *message.Message) { hook(st, m) }
		}
		if cfg.Metrics != nil {
			scfg.OnEvent = cfg.Metrics.SubscriberEvent
		}
		switch stage {
		case streams.StageFetch:
			order, defaults := frontier.Order(cfg.Spider.Settings.Order), hostDefaults(cfg.Spider.Settings)
			delayed, err := frontier.NewDelayed(cfg.Client, layout, order, defaults)
			if err != nil {
				return err
			}
			defer delayed.Close()
			dispatcher, err := frontier.NewDispatcher(frontier.DispatcherConfig{Client: cfg.Client, Layout: layout,
				Window: cfg.Spider.Settings.FrontierWindow, CountUnread: cfg.CountUnread, Hosts: defaults, Logger: slog})
			if err != nil {
				return err
			}
			seedFrontier, err := NewFrontier(ctx, cfg.Client, cfg.Spider, -1, cfg.CountUnread, slog)
			if err != nil {
				return err
			}
			defer seedFrontier.Close()
			scope, err := cfg.Spider.Scope()
			if err != nil {
				return err
			}
			seeds := &seedPoller{rdb: cfg.Client, spider: cfg.Spider, scope: scope, seeds: frontier.NewSeeds(cfg.Client, cfg.Spider.Name),
				frontier: seedFrontier, dead: layout.Part(0).Dead(), counters: counters, log: slog}
			background.Add(3)
			go func() { defer background.Done(); delayed.Run(runCtx, frontier.DefaultDelayedInterval, slog) }()
			go func() { defer background.Done(); dispatcher.Run(runCtx) }()
			go func() { defer background.Done(); seeds.run(runCtx, DefaultSeedPoll) }()
			hosts, err := frontier.NewHosts(cfg.Client, layout, defaults, order)
			if err != nil {
				return err
			}
			defer hosts.Close()
			hostStats := streams.NewCounters(cfg.Client, keys.HostStats(), streams.DefaultCountersInterval)
			defer hostStats.Close()
			f, err := NewFetch(FetchConfig{Settings: cfg.Spider.Settings, Scope: scope, FollowFilter: cfg.Spider.FollowFilter, Delayed: delayed, Hosts: hosts,
				Client: cfg.Client, Layout: layout, RetryBase: cfg.RetryBase, RobotsRetry: cfg.RobotsRetry, Counters: counters,
				Metrics: cfg.Metrics, HostStats: hostStats, Logger: slog})
			if err != nil {
				return err
			}
			if cfg.Spider.Login != nil {
				if err := f.loginOnce(ctx, cfg.Client, keys, cfg.Spider.Login); err != nil {
					return err
				}
			}
			scfg.MaxInFlight = cfg.Spider.Settings.Concurrency
			if cfg.MaxBacklog > 0 {
				var responses []string
				for _, k := range layout.Parts() {
					responses = append(responses, k.Responses())
				}
				backlog := streams.NewBacklog(cfg.Client, responses, streams.StageParse, cfg.MaxBacklog)
				scfg.Gate = backlog.Under
				background.Add(1)
				go func() { defer background.Done(); backlog.Run(runCtx, 100*time.Millisecond) }()
			}
			sub, err := newStageSubscriber(scfg)
			if err != nil {
				return err
			}
			for i, k := range layout.Parts() {
				router.AddHandler(handlerName(stage, i, layout), k.Requests(), sub, k.Responses(), pub, f.Handle)
			}
		case streams.StageParse:
			if fr == nil {
				if fr, err = NewFrontier(ctx, cfg.Client, cfg.Spider, 0, cfg.CountUnread, log); err != nil {
					return err
				}
			}
			p, err := NewParse(ParseConfig{Spider: cfg.Spider, Frontier: fr, Counters: counters, Logger: slog})
			if err != nil {
				return err
			}
			scfg.MaxInFlight = cfg.ParseConcurrency
			sub, err := newStageSubscriber(scfg)
			if err != nil {
				return err
			}
			for i, k := range layout.Parts() {
				router.AddConsumerHandler(handlerName(stage, i, layout), k.Responses(), sub, p.HandleIn(i))
			}
		case streams.StageStore:
			s, err := NewStore(cfg.Sink, cfg.Processors, counters)
			if err != nil {
				return err
			}
			scfg.MaxInFlight = cfg.StoreConcurrency
			sub, err := newStageSubscriber(scfg)
			if err != nil {
				return err
			}
			for i, k := range layout.Parts() {
				router.AddConsumerHandler(handlerName(stage, i, layout), k.Items(), sub, s.Handle)
			}
		default:
			return fmt.Errorf("handlers: unknown stage %q (want fetch, parse or store)", stage)
		}
	}

	trim := map[string]streams.Retention{}
	recorded := map[string]streams.Retention{}
	for _, stage := range cfg.Stages {
		for _, k := range layout.Parts() {
			trim[k.Input(stage)] = cfg.Retain[stage]
		}
		for kind, st := range stageOfStream {
			if st == stage {
				recorded[kind] = cfg.Retain[stage]
			}
		}
	}
	if err := streams.RecordRetention(ctx, cfg.Client, keys.Meta(), recorded); err != nil {
		log.Debug("retention not recorded for status", zap.Error(err))
	}
	background.Add(2)
	go func() { defer background.Done(); waits.run(runCtx, DefaultWaitLogInterval) }()
	go func() {
		defer background.Done()
		streams.RunTrimmer(runCtx, cfg.Client, trim, cfg.TrimInterval, log)
	}()
	watchDone := make(chan error, 1)
	go func() { watchDone <- watch(runCtx, cancel, cfg, layout, outage, log) }()
	log.Info("stages running", zap.Strings("stages", cfg.Stages))
	if err := router.Run(runCtx); err != nil {
		return fmt.Errorf("handlers: %w", err)
	}
	cancel()
	// The last acks are in: leave nothing acked past retention behind.
	tctx, tcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	streams.TrimOnce(tctx, cfg.Client, trim, log)
	tcancel()
	return <-watchDone
}

// handlerName names the router handler of a stage's partition i.
func handlerName(stage string, i int, l frontier.Layout) string {
	if l.N() == 1 {
		return stage
	}
	return stage + "-" + strconv.Itoa(i)
}

func newStageSubscriber(cfg streams.SubscriberConfig) (*streams.Subscriber, error) {
	cfg.BatchSize = min(max(cfg.BatchSize, streams.DefaultBatchSize), cfg.MaxInFlight)
	return streams.NewSubscriber(cfg)
}

// watch logs progress and, with UntilDone, ends the run once the crawl is done.
func watch(ctx context.Context, stop context.CancelFunc, cfg Config, layout frontier.Layout, outage *streams.Outage, log *zap.Logger) error {
	t := time.NewTicker(cfg.PollInterval)
	defer t.Stop()
	lastLog := time.Now()
	failures, seedWarned := 0, 0
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		p, err := frontier.ReadProgress(ctx, cfg.Client, layout)
		if err != nil {
			if ctx.Err() == nil && failures%20 == 0 {
				log.Warn("cannot read crawl progress; retrying", zap.Error(err))
			}
			failures++
			continue
		}
		failures = 0
		if err := p.Err(); err != nil {
			// The crawl cannot finish: a run waiting for it to end stops with the error;
			// services keep serving the rest and say so.
			if cfg.UntilDone {
				log.Error("cannot take start urls; stopping", zap.Error(err))
				stop()
				return err
			}
			if seedWarned%20 == 0 {
				log.Error("cannot take start urls; the crawl cannot finish until the key is fixed", zap.Error(err))
			}
			seedWarned++
		}
		if time.Since(lastLog) >= 5*time.Second {
			lastLog = time.Now()
			fields := []zap.Field{}
			for _, s := range p.Stages {
				fields = append(fields, zap.Int64(s.Group+"_pending", s.Pending), zap.Bool(s.Group+"_unread", s.Unread))
			}
			log.Info("progress", fields...)
		}
		if cfg.UntilDone && p.Done() && !outage.Active() {
			log.Info("crawl done: frontier empty, nothing pending or unread in any stage")
			stop()
			return nil
		}
	}
}
