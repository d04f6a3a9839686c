package handlers

import (
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/handlers/fetch/browser"
	"github.com/streamcrawl/streamcrawl/handlers/metrics"
	"github.com/streamcrawl/streamcrawl/processors"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// DefaultMaxBacklog is the default bound on responses waiting for the parse stage
// (about 5 KB each in Redis when compressed).
const DefaultMaxBacklog = 5000

// runConfig is how one process runs its stages: the settings of Options with what
// Crawl opened for the run (the client, the sink, the logger), built by Options.run.
// Archive and post-processor runs use its basic defaults (setBasicDefaults).
type runConfig struct {
	// Client is the Redis client; the run does not close it.
	Client redis.UniversalClient
	// Spider is the crawl's spider.
	Spider *spiders.Spider
	// Stages to run: any of streams.StageFetch, StageParse, StageStore.
	Stages []string
	// Sink receives items in the store stage; the run closes it when it stops.
	Sink processors.Sink
	// Processors run on each item in the store stage, in order, before the sink.
	Processors processors.Chain
	// UntilDone ends the run once the whole crawl is done (Options.Serve unset).
	UntilDone bool
	// Logger; nil means no-op.
	Logger *zap.Logger

	// The settings of Options (see there).
	Consumer         string
	Continuous       *inspect.Continuous
	PollInterval     time.Duration
	ParseConcurrency int
	StoreConcurrency int
	HandoffBytes     int64
	Retain           map[string]spiders.StreamRetention
	TrimInterval     time.Duration
	CountUnread      bool
	MaxBacklog       int64
	RetryBase        time.Duration
	RobotsRetry      time.Duration
	Subscriber       streams.SubscriberConfig
	Durability       string
	BeforeAck        func(stage string, msg *message.Message)
	Browser          *browser.Config
	Metrics          *metrics.Metrics
}

// run returns the configuration of a run of o's settings by sp's stages on c (Crawl's
// run), feeding sink and logging to log: the one place where Options becomes a run.
func (o Options) run(c *streams.Client, sp *spiders.Spider, stages []string, sink processors.Sink, log *zap.Logger) runConfig {
	return runConfig{
		Client: c.UniversalClient, Spider: sp, Stages: stages, Sink: sink, Processors: o.Processors,
		UntilDone: !o.Serve, Logger: log,
		Consumer: o.Consumer, Continuous: o.Continuous, PollInterval: o.PollInterval,
		ParseConcurrency: o.ParseConcurrency, StoreConcurrency: o.StoreConcurrency, HandoffBytes: o.HandoffBytes,
		Retain: o.Retain, TrimInterval: o.TrimInterval, CountUnread: o.CountUnread || c.Embedded != nil,
		MaxBacklog: o.MaxBacklog, RetryBase: o.RetryBase, RobotsRetry: o.RobotsRetry, Subscriber: o.Subscriber,
		Durability: o.Durability, BeforeAck: o.BeforeAck, Browser: o.Browser, Metrics: o.Metrics,
	}
}

// setBasicDefaults sets the defaults every kind of run shares.
func (c *runConfig) setBasicDefaults() {
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

func (c *runConfig) setDefaults() {
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
	retain := map[string]spiders.StreamRetention{}
	for kind, r := range sp.Settings.EffectiveRetention() {
		retain[stageOfStream[kind]] = r
	}
	for k, v := range c.Retain {
		retain[k] = v
	}
	c.Retain = retain
}

// stageOfStream names the stage whose group reads each kind of stream.
var stageOfStream = map[string]string{"requests": streams.StageFetch, "responses": streams.StageParse, "items": streams.StageStore}
