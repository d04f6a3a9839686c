package handlers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/streamcrawl/streamcrawl/handlers/fetch/browser"
	"github.com/streamcrawl/streamcrawl/handlers/metrics"
	"github.com/streamcrawl/streamcrawl/processors"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// Options says how Crawl runs a spider: it is the one configuration of a run (the
// command line's flags fill it). The zero value runs every stage in this process on an
// embedded Redis, seeds the spider's start URLs, writes items to "<spider name>.jsonl"
// and returns once the crawl is done, with the defaults each field states.
type Options struct {
	// Redis is the Redis URL (see streams.ClientOptions.URL). Empty: an embedded
	// in-process Redis, which lives as long as the call (nothing persisted). Crawl
	// closes the client it opens.
	Redis string
	// Client is an open client to use instead of Redis; Crawl does not close it.
	Client *streams.Client
	// Stages to run: any of streams.StageFetch, StageParse, StageStore. Default all
	// three. Processes running some stages against the same Redis share the crawl.
	Stages []string
	// Out says where the store stage writes items (see processors.Open): FILE.jsonl,
	// FILE.csv, a postgres:// URL, or processors.StreamOnly. Default the spider's Sink,
	// else "<spider name>.jsonl". Ignored when Sink is set or the store stage does not
	// run.
	Out string
	// Sink receives items instead of Out; Crawl closes it when it returns.
	Sink processors.Sink
	// Processors run on each item in the store stage, in order, before the sink.
	Processors processors.Chain
	// Fresh deletes the crawl's keys in Redis first and starts over (refused, with an
	// error matching inspect.ErrRunning, while services of the crawl are alive);
	// otherwise a crawl found in Redis resumes, if sp is the spider that started it
	// (else an error matching ErrOtherSpider).
	Fresh bool
	// NoSeed leaves the spider's start URLs out (seeded by another process, or by
	// `streamcrawl seed`). By default Crawl seeds them; seeding again is harmless.
	NoSeed bool
	// Serve keeps the stages running after the crawl is done, until ctx ends, as a
	// service waiting for more work does. By default Crawl returns once the crawl is
	// done (frontier empty, nothing pending or unread in any stage).
	Serve bool
	// Logger gets the run's log. Nil logs warnings and errors to stderr (a crawl that
	// drops its requests, a selector that matches nothing, Redis outages); pass
	// zap.NewNop() for silence.
	Logger *zap.Logger
	// Started, when set, is called once the crawl is seeded, before the stages start;
	// the function it returns is called when they have stopped. The command line shows
	// its progress line with it.
	Started func(ctx context.Context, rdb *streams.Client, l streams.Layout) (stop func())

	// The finer settings of the run: how this process takes part in the crawl.

	// Consumer names this process in the stage groups. Keep it stable for one process
	// slot (a restart re-reads its own pending entries). Default host-pid.
	Consumer string
	// Continuous, when set, is recorded as the crawl's continuous mode before the run
	// (inspect.SetContinuous; "done" then waits for its revisits, see
	// inspect.Progress.Done). Nil leaves the crawl's mode as Redis holds it.
	Continuous *inspect.Continuous
	// PollInterval is how often "done" is checked and progress logged. Default 250ms.
	PollInterval time.Duration
	// FetchConcurrency caps the requests in flight in this process's fetch stage below
	// the spider's concurrency setting: a fleet worker gives each crawl its share of the
	// worker's. Default 0: the spider's setting.
	FetchConcurrency int
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
	// trusting XINFO's lag. Default false; always on with the embedded Redis.
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
	// MaxInFlight are set by the run). Default: streams.SubscriberDefaults.
	Subscriber streams.SubscriberConfig
	// Durability overrides the spider's durability setting ("": the spider's): see
	// spiders.Settings.Durability. Crawl applies it to its client.
	Durability string
	// SharedHosts says which hosts (spiders.HostKey) other crawls reach too (see
	// fleet.SharedHosts): the fetch stage passes such a host's fleet-wide politeness gate
	// (package streams/hostgate) before each request to it, so that every crawl keeps
	// one pace there, the stricter rule of theirs. Default nil: no host is shared, and
	// the gate costs nothing.
	SharedHosts func(host string) bool
	// Browser configures the fetch process's browser pool, for pages that ask to be
	// rendered (binary or remote URL, browsers, tabs, retirement; Dial is set by the
	// run). Nil: the defaults, when a Chromium is found on PATH.
	Browser *browser.Config
	// Metrics, when set, receives the process's figures (stage messages, fetch outcomes
	// and latency, items stored, dead letters, reclaims). The run does not serve them.
	// Default nil: none.
	Metrics *metrics.Metrics
	// BeforeAck is a fault hook for tests, not for production use (see
	// streams.SubscriberConfig.BeforeAck), called with the stage name before each ack.
	// Default nil.
	BeforeAck func(stage string, msg *message.Message)
}

// ErrNoStatus is wrapped in the error Crawl returns when the stages ran and stopped
// cleanly but the crawl's status could not be read afterwards (Redis gone at the end).
var ErrNoStatus = errors.New("handlers: crawl status not read")

// ErrFailoverLoss is wrapped in the error Crawl returns, with the status, when the crawl
// is done but Redis failed over during it while its writes did not wait for replicas
// (durability async; inspect.Status.Failover says when): writes the old primary had
// acknowledged and not passed on are lost, so pages may be missing although nothing is
// left to do. A crawl is never reported plainly done then.
var ErrFailoverLoss = errors.New("handlers: the crawl is done, but Redis failed over during it with durability async: writes the old primary acknowledged may be lost")

// statusTimeout bounds the read of the final status.
const statusTimeout = 10 * time.Second

// countersSettle is how long a crawl that seems to have fetched no page waits before
// it reads the counters again: every process sends its counts to Redis once a second
// (streams.Counters), so pages another process fetched last may not be counted yet.
const countersSettle = 1500 * time.Millisecond

// AllStages are the three stages of a crawl, in the order data flows through them.
var AllStages = []string{streams.StageFetch, streams.StageParse, streams.StageStore}

// Crawl runs sp with the stages opts names until the crawl is done or ctx ends, then
// returns the crawl's status as Redis holds it. It connects to Redis (or starts an
// embedded one), opens the sink, seeds the start URLs and runs the stages; everything it
// opened is closed when it returns, in the order runStages documents and then
// the Redis client last.
//
// A ctx that ends is not an error: the in-flight work is finished and acked, and the
// returned status says whether the crawl was done.
//
// A crawl that ends done without having fetched a page although its start URLs were
// tried returns its status and an error wrapping ErrNoPageFetched that names each start
// URL and what became of it (a final 4xx, retries run out, robots.txt unreachable, a
// drop); when every request was dropped before it was sent (the network guard,
// robots.txt, refused redirects) it wraps ErrEveryRequestDropped too and names the
// reasons and the settings to change. One that dropped more requests than it fetched
// returns a warning in Status.Warnings. A crawl run with every stage that was already done runs nothing and
// says so in Status.Warnings. Warnings are logged too, and so are the spider's
// (Spider.Warnings: deprecated keys of its file) when the crawl starts.
func Crawl(ctx context.Context, sp *spiders.Spider, opts Options) (st *inspect.Status, err error) {
	stages := opts.Stages
	if len(stages) == 0 {
		stages = AllStages
	}
	var bad error
	if sp == nil {
		bad = errors.New("handlers: crawl needs a spider")
	}
	for _, s := range stages {
		if !slices.Contains(AllStages, s) {
			bad = fmt.Errorf("handlers: unknown stage %q (want fetch, parse or store)", s)
		}
	}
	// Crawl owns opts.Sink whatever happens: closed here unless handed to the run, which
	// closes it.
	owned := opts.Sink
	defer func() {
		if owned != nil {
			closeSink(ctx, owned, &err)
		}
	}()
	if bad != nil {
		return nil, bad
	}
	log := opts.Logger
	if log == nil {
		log = stderrLogger()
	}
	for _, w := range sp.Warnings { // what the spider's loader noticed: deprecated keys
		log.Warn(w)
	}
	c := opts.Client
	if c == nil {
		if c, err = streams.Connect(ctx, streams.ClientOptions{URL: opts.Redis, Partitions: sp.Settings.Partitions, Logger: log}); err != nil {
			return nil, err
		}
		defer func() {
			if cerr := c.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("handlers: close redis: %w", cerr)
			}
		}()
	}
	cfg := opts.run(c, sp, stages, nil, log)
	if slices.Contains(stages, streams.StageStore) {
		// Opened (and Out checked) before anything changes in Redis.
		if cfg.Sink, err = openSink(ctx, sp, opts, log); err != nil {
			return nil, err
		}
		owned = cfg.Sink
	}
	if err := c.SetDurability(ctx, durability(sp, cfg.Durability)); err != nil {
		return nil, err
	}
	if err := prepare(ctx, c, sp, opts, log); err != nil {
		return nil, err
	}
	if cfg.Continuous != nil {
		l, err := streams.ReadLayout(ctx, c, sp.Name)
		if err == nil {
			err = recordContinuous(ctx, c, l, cfg.Continuous)
		}
		if err != nil {
			return nil, err
		}
	}
	var warnings []string
	if done, err := alreadyDone(ctx, c, sp, opts, stages); err != nil {
		return nil, err
	} else if done {
		warnings = append(warnings, fmt.Sprintf(AlreadyDoneFormat, sp.Name, sp.Name))
	} else {
		if opts.Started != nil {
			l, lerr := streams.ReadLayout(ctx, c, sp.Name)
			if lerr == nil {
				stop := opts.Started(ctx, c, l)
				defer stop()
			}
		}
		if cfg.Sink != nil {
			owned = nil // the run closes it
		}
		if err := runStages(ctx, cfg); err != nil {
			return nil, err
		}
	}
	// The run's ctx may have ended: the status is read all the same.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), statusTimeout)
	defer cancel()
	layout, err := streams.ReadLayout(rctx, c, sp.Name)
	if err == nil {
		st, err = inspect.ReadStatus(rctx, c, layout)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoStatus, err)
	}
	if w := droppedWarning(st); w != "" {
		warnings = append(warnings, w)
	}
	err = noPageFetched(rctx, c, layout, sp, st)
	if err != nil && c.Embedded == nil {
		// Counters reach Redis once a second from each process: another fetch
		// process's pages may not be counted yet. Read them again once they are.
		select {
		case <-time.After(countersSettle):
			if again, rerr := inspect.ReadStatus(rctx, c, layout); rerr == nil {
				st = again
				err = noPageFetched(rctx, c, layout, sp, st)
			}
		case <-rctx.Done():
		}
	}
	for _, w := range warnings {
		log.Warn(w)
	}
	st.Warnings = warnings
	if err == nil && st.Done && st.Failover != "" {
		err = fmt.Errorf("%w (%s)", ErrFailoverLoss, st.Failover)
	}
	if err != nil {
		log.Error(err.Error())
	}
	return st, err
}

// AlreadyDoneFormat is the warning of a crawl run again once it is done (crawl name
// twice).
const AlreadyDoneFormat = "crawl %s is already done; --fresh (Options.Fresh) or `streamcrawl reset --crawl %s` to crawl it again"

// alreadyDone reports that a run of every stage until done found the crawl done before
// it started (seeding queued nothing new): there is nothing to run.
func alreadyDone(ctx context.Context, c *streams.Client, sp *spiders.Spider, opts Options, stages []string) (bool, error) {
	if opts.Serve || opts.Fresh || len(stages) != len(AllStages) {
		return false, nil
	}
	l, err := streams.ReadLayout(ctx, c, sp.Name)
	if err != nil {
		return false, err
	}
	p, err := inspect.ReadProgress(ctx, c, l)
	if err != nil {
		return false, err
	}
	return p.Done(), nil
}

// stderrLogger is the logger of a Crawl given none: warnings and errors, on stderr.
func stderrLogger() *zap.Logger {
	enc := zap.NewDevelopmentEncoderConfig()
	enc.EncodeLevel = zapcore.CapitalLevelEncoder
	return zap.New(zapcore.NewCore(RedactingEncoder(zapcore.NewConsoleEncoder(enc)), zapcore.Lock(os.Stderr), zap.WarnLevel))
}

// durability is the spider's durability setting, or mode when set (--durability).
func durability(sp *spiders.Spider, mode string) streams.Durability {
	d := streams.Durability{Mode: sp.Settings.Durability, Replicas: sp.Settings.DurabilityReplicas}
	if mode != "" && mode != d.Mode {
		d = streams.Durability{Mode: mode}
	}
	return d
}

// openSink opens the sink opts names: its Sink, or Out (default OutOf's).
func openSink(ctx context.Context, sp *spiders.Spider, opts Options, log *zap.Logger) (processors.Sink, error) {
	if opts.Sink != nil {
		return opts.Sink, nil
	}
	return processors.Open(ctx, OutOf(sp, opts.Out), log)
}

// OutOf is where a run with Options.Out out stores sp's items: out when given, else
// the spider's sink (the sink key of its YAML), else "<name>.jsonl".
func OutOf(sp *spiders.Spider, out string) string {
	switch {
	case out != "":
		return out
	case sp.Sink != "":
		return sp.Sink
	}
	return sp.Name + ".jsonl"
}

// prepare resets the crawl when asked and seeds its start URLs.
func prepare(ctx context.Context, c *streams.Client, sp *spiders.Spider, opts Options, log *zap.Logger) error {
	if opts.Fresh {
		layout, err := streams.ReadLayout(ctx, c, sp.Name)
		if err != nil {
			return err
		}
		if _, err := inspect.Reset(ctx, c, layout); err != nil {
			return err
		}
	}
	if opts.NoSeed {
		return nil
	}
	n, err := Seed(ctx, c, sp, nil)
	if err != nil {
		return err
	}
	log.Sugar().Infof("seeded %d start URLs of %s", n, sp.Name)
	return nil
}

// sinkCloseTimeout bounds the flush of a sink when a run stops.
const sinkCloseTimeout = 10 * time.Second

// closeLogged closes what a run opened that flushes (counters, a publisher, a frontier)
// once ctx may have ended: under ctx's values without its cancellation, each bounding
// its last writes with its own timeout (see their Close). Its error is logged: what it
// could not write is lost (counts) or was failed to the call that queued it.
func closeLogged(ctx context.Context, log *zap.Logger, close func(context.Context) error) {
	if err := close(context.WithoutCancel(ctx)); err != nil {
		log.Warn("closing: a last write failed", zap.Error(err))
	}
}

// closeSink closes s under a bounded context that survives ctx, keeping the first error.
func closeSink(ctx context.Context, s processors.Sink, err *error) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sinkCloseTimeout)
	defer cancel()
	if cerr := s.Close(cctx); cerr != nil && *err == nil {
		*err = cerr
	}
}
