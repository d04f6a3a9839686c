package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/processors"
	"github.com/streamcrawl/streamcrawl/streams"
)

var stageHelp = map[string]string{
	streams.StageFetch: "Run the fetch stage: requests stream -> HTTP -> responses stream",
	streams.StageParse: "Run the parse stage: responses stream -> spider callbacks -> items and new requests",
	streams.StageStore: "Run the store stage: items stream -> sink (--out: a JSONL or CSV file, or a PostgreSQL table)",
}

// stageCommand runs one stage as its own service.
func (a *App) stageCommand(stage string) *cobra.Command {
	var f RunFlags
	var spiderPath string
	cmd := &cobra.Command{
		Use:   stage + " [SPIDER.yaml] --redis URL [--spider SPIDER.yaml]",
		Short: stageHelp[stage],
		Long: stageHelp[stage] + `.

Start any number of these processes, on any machines, against the same Redis: they share
the work through the stage's consumer group. Without --until-done the service waits for
more work forever; with it, it exits 0 once the whole crawl is done. SIGINT/SIGTERM stop
reading, let in-flight work finish (up to --shutdown-timeout), ack it and exit 0.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			return a.endInterrupted(ctx, stage, a.runStage(ctx, stage, &f, spiderPath, args))
		},
	}
	a.RedisFlags(cmd, false)
	a.redisWaitFlag(cmd)
	f.Add(cmd, stage == streams.StageStore, stage)
	f.AddMetrics(cmd)
	f.AddContinuous(cmd)
	spiderFlag(cmd, &spiderPath)
	cmd.Flags().BoolVar(&f.UntilDone, "until-done", false, "exit 0 once the whole crawl is done")
	cmd.SetFlagErrorFunc(spiderFlagError)
	return cmd
}

// runStage runs one stage as a service until ctx ends or, with --until-done, the crawl
// is done.
func (a *App) runStage(ctx context.Context, stage string, f *RunFlags, spiderPath string, args []string) error {
	if err := validStage(stage); err != nil {
		return err
	}
	sp, _, err := a.spiderArg(spiderPath, args)
	if err != nil {
		return err
	}
	rdb, err := a.connectWorker(ctx, true)
	if err != nil {
		return err
	}
	defer rdb.Close()
	opts, err := f.options()
	if err != nil {
		return err
	}
	opts.Client, opts.Stages, opts.NoSeed, opts.Serve, opts.Logger = rdb, []string{stage}, true, !f.UntilDone, a.Log
	sink := "none"
	if stage == streams.StageStore {
		opts.Out = handlers.OutOf(sp, f.Out) // --out, else the spider's sink, else <name>.jsonl
		sink = sinkKind(processors.RedactedOut(opts.Out))
	}
	if opts.Metrics, err = a.serveMetrics(ctx, f.metricsAddr, rdb, sink, groupsReady(rdb, sp.Name, stage)); err != nil {
		return err
	}
	if stage == streams.StageStore {
		a.Log.Sugar().Infof("storing items of %s in %s", sp.Name, processors.RedactedOut(opts.Out))
	}
	// A stage that stopped cleanly has done its job even when the crawl's
	// status cannot be read afterwards (Redis gone at the end).
	if _, err := handlers.Crawl(ctx, sp, opts); err != nil && !errors.Is(err, handlers.ErrNoStatus) {
		return fmt.Errorf("%s: %w", stage, err)
	}
	return nil
}
