package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/streams"
)

var stageHelp = map[string]string{
	streams.StageFetch: "Run the fetch stage: requests stream -> HTTP -> responses stream",
	streams.StageParse: "Run the parse stage: responses stream -> spider callbacks -> items and new requests",
	streams.StageStore: "Run the store stage: items stream -> sink (JSONL file)",
}

// stageCommand runs one stage as its own service.
func (a *app) stageCommand(stage string) *cobra.Command {
	var f runFlags
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
			if err := validStage(stage); err != nil {
				return err
			}
			path, _, err := spiderFrom(spiderPath, args)
			if err != nil {
				return err
			}
			sp, err := a.loadSpider(path)
			if err != nil {
				return err
			}
			rdb, err := a.connectWorker(ctx, true)
			if err != nil {
				return err
			}
			defer rdb.Close()
			cfg, err := f.config(a, []string{stage})
			if err != nil {
				return err
			}
			cfg.Client, cfg.Spider = rdb, sp
			cfg.CountUnread = rdb.Embedded != nil
			sink := "none"
			if stage == streams.StageStore {
				sink = sinkKind(f.out)
			}
			if cfg.Metrics, err = a.serveMetrics(ctx, f.metricsAddr, rdb, sink, groupsReady(rdb, sp.Name, stage)); err != nil {
				return err
			}
			if stage == streams.StageStore {
				sink, path, err := f.openSink(ctx, sp.Name, a.log)
				if err != nil {
					return err
				}
				cfg.Sink = sink
				a.log.Sugar().Infof("storing items of %s in %s", sp.Name, path)
			}
			if err := handlers.Run(ctx, cfg); err != nil {
				return fmt.Errorf("%s: %w", stage, err)
			}
			return nil
		},
	}
	a.redisFlags(cmd, false)
	f.add(cmd, stage == streams.StageStore)
	f.addMetrics(cmd)
	spiderFlag(cmd, &spiderPath)
	cmd.Flags().BoolVar(&f.untilDone, "until-done", false, "exit 0 once the whole crawl is done")
	return cmd
}
