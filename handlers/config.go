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

// Config is how a process runs its stages: the finer settings of Crawl
// (Options.Tuning), and the settings of archive and post-processor runs. Crawl sets
// Client, Spider, Stages, Sink, Processors, UntilDone and Logger from its Options.
type Config struct {
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
	// Consumer names this process in the stage groups. Keep it stable for one process
	// slot (a restart re-reads its own pending entries). Default host-pid.
	Consumer string
	// UntilDone ends the run once the whole crawl is done.
	UntilDone bool
	// Continuous, when set, is recorded as the crawl's continuous mode before the run
	// (inspect.SetContinuous; "done" then waits for its revisits, see
	// inspect.Progress.Done). Nil leaves the crawl's mode as Redis holds it.
	Continuous *inspect.Continuous
	// PollInterval is how often "done" is checked and progress logged. Default 250ms.
	PollInterval time.Duration
	// ParseConcurrency is the number of responses in the parse stage at once (parsing, or
	// waiting for Redis to take the page's output). Default 16×GOMAXPROCS.
	ParseConcurrency int
	// StoreConcurrency is the number of items in flight to the sink. Default 256.
	StoreConcurrency int
	// HandoffBytes bounds the process's response hand-off, where a process running the
	// fetch and parse stages together keeps the responses it published for its own
	// parse stage, which then need not decode them (counted responses_handoff_hits; an
	// entry that is not there is decoded, counted responses_handoff_misses). Default
	// DefaultHandoffBytes; negative: none (every entry is decoded).
	HandoffBytes int64
	// Retain says what each stream keeps after every group has acked it (for replay),
	// by stage of its reading group. Missing stages get the spider's
	// settings.retention, or its defaults (requests and responses nothing, items a day
	// up to 16 MB).
	Retain map[string]spiders.StreamRetention
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
	// Default fetch.DefaultRetryBase.
	RetryBase time.Duration
	// RobotsRetry is how long a robots.txt answering 5xx keeps its host disallowed
	// before it is fetched again, doubled after each try (the spider's
	// robots_unreachable_tries in all). Default fetch.DefaultRobotsRetry.
	RobotsRetry time.Duration
	// Subscriber tunes every stage's subscriber (Group, Consumer, DeadStream, Client and
	// MaxInFlight are set by the run).
	Subscriber streams.SubscriberConfig
	// Durability overrides the spider's durability setting ("": the spider's): see
	// spiders.Settings.Durability. Crawl applies it to its client.
	Durability string
	// Logger; nil means no-op.
	Logger *zap.Logger
	// BeforeAck is a fault hook for tests (see streams.SubscriberConfig.BeforeAck), called
	// with the stage name.
	BeforeAck func(stage string, msg *message.Message)
	// Browser configures the fetch process's browser pool, for pages that ask to be
	// rendered (binary or remote URL, browsers, tabs, retirement; Dial is set by the
	// run). Nil: the defaults, when a Chromium is found on PATH.
	Browser *browser.Config
	// Metrics, when set, receives the process's figures (stage messages, fetch outcomes
	// and latency, items stored, dead letters, reclaims). The run does not serve them.
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
