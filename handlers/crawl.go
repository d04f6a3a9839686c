package handlers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/streamcrawl/streamcrawl/processors"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// Options says how Crawl runs a spider. The zero value runs every stage in this process
// on an embedded Redis, seeds the spider's start URLs, writes items to
// "<spider name>.jsonl" and returns once the crawl is done.
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
	// FILE.csv, a postgres:// URL, or processors.StreamOnly. Default
	// "<spider name>.jsonl". Ignored when Sink is set or the store stage does not run.
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
	// Tuning holds the finer settings of the run (consumer name, concurrency, retention,
	// subscriber, metrics, ...). Its Client, Spider, Stages, Sink, Processors,
	// UntilDone and Logger are set from the fields above.
	Tuning Config
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
// A crawl that ends done without having fetched a page because every request was
// dropped (the network guard, robots.txt, refused redirects) returns its status and an
// error wrapping ErrEveryRequestDropped that names the reasons and the settings to
// change; one that dropped more requests than it fetched returns a warning in
// Status.Warnings. A crawl run with every stage that was already done runs nothing and
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
	cfg := opts.Tuning
	cfg.Client, cfg.Spider, cfg.Stages, cfg.Processors = c.UniversalClient, sp, stages, opts.Processors
	cfg.UntilDone, cfg.Logger = !opts.Serve, log
	cfg.CountUnread = cfg.CountUnread || c.Embedded != nil
	if slices.Contains(stages, streams.StageStore) {
		// Opened (and Out checked) before anything changes in Redis.
		if cfg.Sink, err = openSink(ctx, sp.Name, opts, log); err != nil {
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
	warning, err := checkDropped(st)
	if warning != "" {
		warnings = append(warnings, warning)
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
	return zap.New(zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.Lock(os.Stderr), zap.WarnLevel))
}

// durability is the spider's durability setting, or mode when set (--durability).
func durability(sp *spiders.Spider, mode string) streams.Durability {
	d := streams.Durability{Mode: sp.Settings.Durability, Replicas: sp.Settings.DurabilityReplicas}
	if mode != "" && mode != d.Mode {
		d = streams.Durability{Mode: mode}
	}
	return d
}

// openSink opens the sink opts names: its Sink, or Out (default <name>.jsonl).
func openSink(ctx context.Context, name string, opts Options, log *zap.Logger) (processors.Sink, error) {
	if opts.Sink != nil {
		return opts.Sink, nil
	}
	out := opts.Out
	if out == "" {
		out = name + ".jsonl"
	}
	return processors.Open(ctx, out, log)
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

// closeSink closes s under a bounded context that survives ctx, keeping the first error.
func closeSink(ctx context.Context, s processors.Sink, err *error) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sinkCloseTimeout)
	defer cancel()
	if cerr := s.Close(cctx); cerr != nil && *err == nil {
		*err = cerr
	}
}
