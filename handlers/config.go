package handlers

import (
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/processors"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
)

// DefaultMaxBacklog is the default bound on responses waiting for the parse stage
// (about 5 KB each in Redis when compressed).
const DefaultMaxBacklog = 5000

// runConfig is how one process runs its stages: the settings of Options with what
// Crawl opened for the run (the client, the spider; Options' Stages, Sink and Logger
// set to the run's), built by Options.run. Archive and post-processor runs use its
// basic defaults (setBasicDefaults).
type runConfig struct {
	Options
	// Client is the Redis client; the run does not close it.
	Client redis.UniversalClient
	// Spider is the crawl's spider.
	Spider *spiders.Spider
	// UntilDone ends the run once the whole crawl is done (Options.Serve unset).
	UntilDone bool
}

// run returns the configuration of a run of o's settings by sp's stages on c (Crawl's
// run), feeding sink and logging to log: the one place where Options becomes a run.
func (o Options) run(c *streams.Client, sp *spiders.Spider, stages []string, sink processors.Sink, log *zap.Logger) runConfig {
	o.Stages, o.Sink, o.Logger = stages, sink, log
	o.CountUnread = o.CountUnread || c.Embedded != nil
	return runConfig{Options: o, Client: c.UniversalClient, Spider: sp, UntilDone: !o.Serve}
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
