package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/handlers/metrics"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

func (a *App) crawlCommand() *cobra.Command {
	var f RunFlags
	var fresh bool
	var spiderPath string
	cmd := &cobra.Command{
		Use:   "crawl SPIDER.yaml | --spider SPIDER.yaml",
		Short: "Run a whole crawl in one process (all stages) until it is done",
		Long: `crawl seeds the spider's start URLs, runs the fetch, parse and store stages in this
process until the crawl is done (frontier empty, nothing pending or unread in any stage),
prints a summary and exits 0.

Without --redis (and REDIS_URL) it uses an embedded in-process Redis: nothing to install,
nothing persisted. With a real Redis the crawl's state persists: run it again to resume,
or pass --fresh to start over.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			path, rest, err := spiderFrom(spiderPath, args)
			if err != nil {
				return err
			}
			if len(rest) > 0 {
				return fmt.Errorf("unexpected argument %q (the spider is given by --spider)", rest[0])
			}
			sp, err := a.loadSpider(path)
			if err != nil {
				return err
			}
			_, err = a.crawlHere(ctx, sp, &f, fresh)
			return err
		},
	}
	a.RedisFlags(cmd, true)
	f.Add(cmd, true)
	f.AddMetrics(cmd)
	cmd.Flags().DurationVar(&a.progressEvery, "progress-interval", 0, "refresh of the progress line on stderr (default 500ms on a terminal, redrawn in place; 5s otherwise, one plain line each)")
	spiderFlag(cmd, &spiderPath)
	cmd.Flags().BoolVar(&fresh, "fresh", false, "delete the crawl's keys in Redis first and start over")
	return cmd
}

// crawlHere connects (--redis, $REDIS_URL, or an embedded Redis) and crawls sp with
// every stage in this process until it is done, with a progress line and a summary.
func (a *App) crawlHere(ctx context.Context, sp *spiders.Spider, f *RunFlags, fresh bool) (*inspect.Status, error) {
	rdb, err := a.connectWorker(ctx, false)
	if err != nil {
		return nil, err
	}
	defer rdb.Close()
	f.UntilDone = true
	a.progress = true
	return a.Crawl(ctx, rdb, sp, f, fresh, a.Stdout)
}

// Crawl seeds and runs every stage of sp in this process on c until done
// (handlers.Crawl), then prints a summary to w.
func (a *App) Crawl(ctx context.Context, c *streams.Client, sp *spiders.Spider, f *RunFlags, fresh bool, w io.Writer) (*inspect.Status, error) {
	cfg, err := f.config(a, handlers.AllStages)
	if err != nil {
		return nil, err
	}
	out := f.Out
	if out == "" {
		out = sp.Name + ".jsonl"
	}
	path := redactOut(out)
	// One process runs the whole crawl: its /metrics serves the crawl-wide families
	// too (streams, frontier, dedup, dead letters), as the exporter does, so that one
	// scrape target is enough.
	crawlWide := metrics.NewCrawlCollector(ctx, metrics.NewSampler(c, 0), metrics.Crawls(sp.Name), a.Log)
	if cfg.Metrics, err = a.serveMetrics(ctx, f.metricsAddr, c, sinkKind(path), groupsReady(c, sp.Name, handlers.AllStages...), crawlWide); err != nil {
		return nil, err
	}
	opts := handlers.Options{Client: c, Out: out, Fresh: fresh, Logger: a.Log, Tuning: cfg}
	if a.progress {
		opts.Started = func(ctx context.Context, c *streams.Client, l streams.Layout) func() {
			return a.startProgress(ctx, c, l)
		}
	}
	start := time.Now()
	st, err := handlers.Crawl(ctx, sp, opts)
	if errors.Is(err, handlers.ErrFailoverLoss) {
		printSummary(w, st, time.Since(start), path) // what it did, then the error
	}
	if err != nil {
		return nil, err
	}
	printSummary(w, st, time.Since(start), path)
	if ctx.Err() != nil && !st.Done {
		fmt.Fprintln(w, "interrupted: in-flight work finished and was acked; with a real Redis, run the same command again to resume")
	}
	return st, nil
}

// printSummary prints what a finished crawl did.
func printSummary(w io.Writer, st *inspect.Status, took time.Duration, out string) {
	s := st.Stats
	fmt.Fprintf(w, "crawl %s: done=%v in %s\n", st.Crawl, st.Done, took.Round(time.Millisecond))
	fmt.Fprintf(w, "  pages fetched   %d (%.0f/s)\n", s["pages_fetched"], float64(s["pages_fetched"])/took.Seconds())
	fmt.Fprintf(w, "  http errors     %d final (4xx), %d retries scheduled, %d requests given up\n",
		s["http_errors_final"], s["retries_scheduled"], s["retries_exhausted"])
	fmt.Fprintf(w, "  urls seen       %d (%d duplicate links dropped)\n", st.Seen, s["requests_duplicate"])
	fmt.Fprintf(w, "  items scraped   %d, stored %d (%d duplicates skipped)\n", s["items_scraped"], s["items_stored"], s["items_duplicate"])
	fmt.Fprintf(w, "  dead letters    %d\n", st.DeadLetters)
	if st.Failover != "" {
		fmt.Fprintf(w, "  redis failover  %s (durability async: writes may be lost)\n", st.Failover)
	}
	if out != "" {
		fmt.Fprintf(w, "  items file      %s\n", out)
	}
}
