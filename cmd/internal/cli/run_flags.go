package cli

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"go.uber.org/zap"

	"github.com/spf13/cobra"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/processors"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
)

// RunFlags are the flags of every command that runs stages.
type RunFlags struct {
	// Out is --out: where the store stage writes items (default <spider name>.jsonl).
	Out string
	// UntilDone is --until-done: stop once the whole crawl is done.
	UntilDone bool

	consumer        string
	shutdownTimeout time.Duration
	maxDeliveries   int
	retryBackoff    time.Duration
	minIdle         time.Duration
	claimInterval   time.Duration
	retain          [3]time.Duration // requests, responses, items
	retainSet       func(name string) bool
	trimInterval    time.Duration
	maxBacklog      int64
	metricsAddr     string
	durability      string
	browser         browserFlags
	continuous      continuousFlags // AddContinuous
}

// AddMetrics adds --metrics-addr to a command that serves metrics.
func (f *RunFlags) AddMetrics(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.metricsAddr, "metrics-addr", "", metricsAddrHelp)
}

// Add adds to cmd the flags of a command that runs stages (all three for crawl and
// demo), each flag only where one of them uses it: those of every consumer
// (AddConsumer; withOut adds --out), --trim-interval and --durability, the retention of
// the streams its stages read (and of responses with the fetch stage, whose encoding
// follows it), and with the fetch stage --max-backlog and the browser flags.
func (f *RunFlags) Add(cmd *cobra.Command, withOut bool, stages ...string) {
	runs := func(stage string) bool { return slices.Contains(stages, stage) }
	f.AddConsumer(cmd, withOut)
	fl := cmd.Flags()
	retain := spiders.DefaultRetention()
	if runs(streams.StageFetch) {
		fl.DurationVar(&f.retain[0], "retain-requests", retain["requests"].MaxAge, "how long the requests stream keeps entries every group has acked (overrides the spider's settings.retention.requests)")
	}
	if runs(streams.StageFetch) || runs(streams.StageParse) {
		fl.DurationVar(&f.retain[1], "retain-responses", retain["responses"].MaxAge, "how long the responses stream keeps acked entries, for re-parsing (overrides settings.retention.responses; default: until parsed)")
	}
	if runs(streams.StageStore) {
		fl.DurationVar(&f.retain[2], "retain-items", retain["items"].MaxAge, "how long the items stream keeps acked entries, for new sinks and post-processors (overrides settings.retention.items; default 24h up to 16MB)")
	}
	f.retainSet = func(name string) bool { return fl.Lookup(name) != nil && fl.Changed(name) }
	fl.DurationVar(&f.trimInterval, "trim-interval", streams.DefaultTrimInterval, "how often acked entries past retention are trimmed")
	fl.StringVar(&f.durability, "durability", "", "when a stage's output counts as written: async (on the Redis primary) or replicated (also on the spider's durability_replicas replicas, default 1; a failover loses none of it) (overrides settings.durability; default async)")
	if runs(streams.StageFetch) {
		fl.Int64Var(&f.maxBacklog, "max-backlog", handlers.DefaultMaxBacklog, "fetchers pause while this many responses wait for the parse stage (-1: no bound)")
		f.browser.add(fl)
	}
}

// AddConsumer adds to cmd the flags of a command that reads a crawl's streams in a
// consumer group (a stage, the archiver, a post-processor): its consumer name and how
// its entries are delivered, taken over and shut down; withOut adds --out, the sink of
// the items it stores.
func (f *RunFlags) AddConsumer(cmd *cobra.Command, withOut bool) {
	fl := cmd.Flags()
	d := streams.SubscriberDefaults()
	fl.StringVar(&f.consumer, "consumer", "", "this process's consumer name in the stage groups; keep it stable per process slot so a restart re-reads its own pending entries (default host-pid)")
	if withOut {
		fl.StringVar(&f.Out, "out", "", "where the store stage writes items: FILE.jsonl (default: the spider's sink, else <spider name>.jsonl), FILE.csv, postgres://user:pass@host/db?table=items, or \"stream\" to keep them in the items stream only")
	}
	fl.DurationVar(&f.shutdownTimeout, "shutdown-timeout", d.ShutdownTimeout, "on SIGINT/SIGTERM, how long in-flight work may take to finish")
	fl.IntVar(&f.maxDeliveries, "max-deliveries", d.MaxDeliveries, "deliveries of an entry before it goes to dead letters")
	fl.DurationVar(&f.retryBackoff, "retry-backoff", d.RetryBackoff, "wait before the first retry of a failed fetch or the redelivery of a failed entry, doubled each time")
	fl.DurationVar(&f.minIdle, "min-idle", d.MinIdle, "how long an entry sits with a silent consumer before another takes it over")
	fl.DurationVar(&f.claimInterval, "claim-interval", d.ClaimInterval, "how often idle entries of dead consumers are looked for")
}

func (f *RunFlags) subscriber() streams.SubscriberConfig {
	return streams.SubscriberConfig{
		ShutdownTimeout: f.shutdownTimeout, MaxDeliveries: f.maxDeliveries, RetryBackoff: f.retryBackoff,
		MinIdle: f.minIdle, ClaimInterval: f.claimInterval,
	}
}

// openSink opens the sink for --out: a .jsonl file (default <name>.jsonl), a .csv
// file, or a postgres:// URL.
func (f *RunFlags) openSink(ctx context.Context, name string, log *zap.Logger) (processors.Sink, string, error) {
	out := f.Out
	if out == "" {
		out = name + ".jsonl"
	}
	s, err := processors.Open(ctx, out, log)
	if err != nil {
		return nil, "", err
	}
	return s, processors.RedactedOut(out), nil
}

// options returns the run's settings the flags give (consumer, retries, backlog,
// subscriber, retention, durability, continuous mode, browsers); the caller sets the
// rest of the Options (client, stages, sink, logger, serve).
func (f *RunFlags) options() (handlers.Options, error) {
	cfg := handlers.Options{Consumer: f.consumer,
		RetryBase: f.retryBackoff, MaxBacklog: f.maxBacklog, Subscriber: f.subscriber(), TrimInterval: f.trimInterval,
		Retain: map[string]spiders.StreamRetention{}, Durability: f.durability}
	if f.durability != "" && f.durability != spiders.DurabilityAsync && f.durability != spiders.DurabilityReplicated {
		return cfg, fmt.Errorf("--durability %q: want async or replicated", f.durability)
	}
	// A --retain-* flag given replaces the spider's retention of that stream (age only,
	// no byte limit); the others keep what the spider says.
	for i, st := range []string{streams.StageFetch, streams.StageParse, streams.StageStore} {
		if name := "retain-" + [...]string{"requests", "responses", "items"}[i]; f.retainSet != nil && f.retainSet(name) {
			cfg.Retain[st] = spiders.StreamRetention{MaxAge: f.retain[i]}
		}
	}
	cfg.Continuous = f.continuous.mode()
	var err error
	if cfg.Browser, err = f.browser.config(); err != nil {
		return cfg, err
	}
	return cfg, installFault(&cfg)
}

// installFault sets a test fault hook on o (Options.BeforeAck); it does nothing outside
// test builds (fault_test.go sets it there).
var installFault = func(*handlers.Options) error { return nil }

// beforeAckOf returns the test fault hook (installFault) of a component that is not a
// stage (the archiver, a post-processor), called name there; nil outside tests.
func beforeAckOf(name string) (func(*message.Message), error) {
	var hc handlers.Options
	if err := installFault(&hc); err != nil || hc.BeforeAck == nil {
		return nil, err
	}
	return func(m *message.Message) { hc.BeforeAck(name, m) }, nil
}

// runGroupReader runs run, a component that reads the crawl as its own consumer group
// (the archiver, a post-processor), called name: it first sets *beforeAck, the field of
// the component's config, to the component's test fault hook (beforeAckOf), and ends as
// endInterrupted does.
func (a *App) runGroupReader(ctx context.Context, name string, beforeAck *func(*message.Message), run func() error) error {
	var err error
	if *beforeAck, err = beforeAckOf(name); err != nil {
		return err
	}
	return a.endInterrupted(ctx, name, run())
}

func validStage(s string) error {
	switch s {
	case streams.StageFetch, streams.StageParse, streams.StageStore:
		return nil
	}
	return fmt.Errorf("unknown stage %q", s)
}
