package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/handlers/metrics"
	"github.com/streamcrawl/streamcrawl/processors"
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
			return a.endInterrupted(ctx, "crawl", err)
		},
	}
	cmd.SetFlagErrorFunc(spiderFlagError)
	a.RedisFlags(cmd, true)
	f.Add(cmd, true, handlers.AllStages...)
	f.AddMetrics(cmd)
	f.AddContinuous(cmd)
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
	a.embedded = rdb.Embedded != nil
	f.UntilDone = true
	a.progress = true
	return a.Crawl(ctx, rdb, sp, f, fresh, a.Stdout)
}

// Crawl seeds and runs every stage of sp in this process on c until done
// (handlers.Crawl), then prints a summary to w.
func (a *App) Crawl(ctx context.Context, c *streams.Client, sp *spiders.Spider, f *RunFlags, fresh bool, w io.Writer) (*inspect.Status, error) {
	opts, err := f.options()
	if err != nil {
		return nil, err
	}
	out := handlers.OutOf(sp, f.Out) // --out, else the spider's sink, else <name>.jsonl
	path := processors.RedactedOut(out)
	// One process runs the whole crawl: its /metrics serves the crawl-wide families
	// too (streams, frontier, dedup, dead letters), as the exporter does, so that one
	// scrape target is enough.
	crawlWide := metrics.NewCrawlCollector(ctx, metrics.NewSampler(c, 0), metrics.Crawls(sp.Name), a.Log)
	if opts.Metrics, err = a.serveMetrics(ctx, f.metricsAddr, c, sinkKind(path), groupsReady(c, sp.Name, handlers.AllStages...), crawlWide); err != nil {
		return nil, err
	}
	opts.Client, opts.Out, opts.Fresh, opts.Logger = c, out, fresh, a.Log
	if a.progress {
		opts.Started = func(ctx context.Context, c *streams.Client, l streams.Layout) func() {
			return a.startProgress(ctx, c, l)
		}
	}
	var before map[string]string // the counters as this run finds them: its rates are over its own work
	if !fresh {
		if before, err = c.HGetAll(ctx, streams.NewKeys(sp.Name).Stats).Result(); err != nil {
			return nil, fmt.Errorf("read the counters of crawl %s: %w", sp.Name, err)
		}
	}
	start := time.Now()
	st, err := handlers.Crawl(ctx, sp, opts)
	if st != nil { // done, or a failover loss: what it did, then the error
		printSummary(w, st, statOf(before, "pages_fetched"), time.Since(start), path)
	}
	return st, err
}

// printSummary prints what a finished crawl did; pagesBefore is how many pages it had
// fetched before this run, which the rate leaves out.
func printSummary(w io.Writer, st *inspect.Status, pagesBefore int64, took time.Duration, out string) {
	s := st.Stats
	fmt.Fprintf(w, "crawl %s: done=%v in %s\n", st.Crawl, st.Done, took.Round(time.Millisecond))
	run := s["pages_fetched"] - pagesBefore
	if pagesBefore > 0 {
		fmt.Fprintf(w, "  pages fetched   %d (%d in this run, %.0f/s)\n", s["pages_fetched"], run, float64(run)/took.Seconds())
	} else {
		fmt.Fprintf(w, "  pages fetched   %d (%.0f/s)\n", s["pages_fetched"], float64(run)/took.Seconds())
	}
	fmt.Fprintf(w, "  http errors     %d final (4xx), %d retries scheduled, %d requests given up\n",
		s["http_errors_final"], s["retries_scheduled"], s["retries_exhausted"])
	fmt.Fprintf(w, "  urls seen       %d (%d duplicate links dropped)\n", st.Seen, s["requests_duplicate"])
	fmt.Fprintf(w, "  items scraped   %d, stored %d (%d duplicates skipped)\n", s["items_scraped"], s["items_stored"], s["items_duplicate"])
	for _, t := range handlers.FieldsOf(s) {
		var fields []string
		for _, f := range t.Fields {
			fields = append(fields, fmt.Sprintf("%s %d%s", f.Field, f.Pages, noneMatched(f)))
		}
		fmt.Fprintf(w, "  fields          %s on %d pages: %s\n", t.Type, t.Pages, strings.Join(fields, ", "))
	}
	if n := s["items_unchanged"]; n > 0 {
		fmt.Fprintf(w, "  items unchanged %d not emitted again (versioned: same values as their key's last version)\n", n)
	}
	if n := s["items_empty"]; n > 0 {
		fmt.Fprintf(w, "  items empty     %d not stored (every field empty)\n", n)
	}
	fmt.Fprintf(w, "  dead letters    %d\n", st.DeadLetters)
	if st.Failover != "" {
		fmt.Fprintf(w, "  redis failover  %s (durability async: writes may be lost)\n", st.Failover)
	}
	if out != "" {
		fmt.Fprintf(w, "  items file      %s\n", out)
	}
}

// noneMatched marks a field that had a value on no page of its type.
func noneMatched(f handlers.FieldCount) string {
	if f.Pages == 0 {
		return " (matched on none)"
	}
	return ""
}
