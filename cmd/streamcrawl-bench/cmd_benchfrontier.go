package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/handlers/metrics"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// frontierOptions configure a frontier-size benchmark.
type frontierOptions struct {
	URLs, Hosts, Batch int
	Capacity           int64
	RedisURL           string
}

// frontierResult is a frontier-size benchmark's outcome.
type frontierResult struct {
	Waiting, Seen       int64
	Took                time.Duration
	MemBefore, MemAfter float64 // used_memory, bytes
	DedupBytes          int64   // MEMORY USAGE of the dedup's keys (status --deep)
	StatusCmds          float64
	StatusTook          time.Duration
	ScrapeCmds          float64
	ScrapeTook          time.Duration
}

func (a *app) benchFrontierCommand() *cobra.Command {
	opt := frontierOptions{}
	cmd := &cobra.Command{
		Use:   "bench-frontier [--urls N] [--hosts N]",
		Short: "Seed N distinct URLs over H hosts (nothing fetched) and report Redis bytes per waiting URL and the cost of one status and one scrape",
		Long: `bench-frontier seeds --urls distinct URLs spread evenly over --hosts hosts into a crawl
(through the seed path of 'streamcrawl seed', --batch URLs per call; nothing is fetched)
and reports Redis used_memory growth per URL, dedup included, the dedup's own bytes per
URL (an exact scan, as 'status --deep'), then the Redis commands and time of one status
read (the read behind 'streamcrawl status') and of one exporter scrape (the crawl
collector behind 'streamcrawl exporter' and 'crawl --metrics-addr').

Without --redis it starts a throw-away redis-server from PATH.`,
		Args: cobra.NoArgs,
		RunE: a.inBenchEnv("bench-frontier", nil, func(ctx context.Context, url, _ string) error {
			opt.RedisURL = url
			res, err := runFrontier(ctx, opt, a.Stderr)
			if err != nil {
				return err
			}
			printFrontier(a.Stdout, opt, res)
			return nil
		}),
	}
	a.RedisFlags(cmd, false)
	cmd.Flags().IntVar(&opt.URLs, "urls", 1_000_000, "distinct URLs to seed")
	cmd.Flags().IntVar(&opt.Hosts, "hosts", 1000, "hosts they spread over")
	cmd.Flags().IntVar(&opt.Batch, "batch", 10_000, "URLs per seed call")
	cmd.Flags().Int64Var(&opt.Capacity, "capacity", 0, "the spider's settings.capacity (sizes the dedup; 0: its default, 10,000,000)")
	return cmd
}

// frontierSpider is the crawl bench-frontier seeds: hosts h0.test ... allowed, nothing
// fetched.
const frontierSpider = `name: frontier
start_urls: ["http://h0.test/"]
`

// runFrontier runs the benchmark (see benchFrontierCommand).
func runFrontier(ctx context.Context, opt frontierOptions, log io.Writer) (*frontierResult, error) {
	yaml := frontierSpider
	if opt.Capacity > 0 {
		yaml += fmt.Sprintf("settings:\n  capacity: %d\n", opt.Capacity)
	}
	sp, c, err := freshCrawl(ctx, opt.RedisURL, "frontier.yaml", []byte(yaml))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	res := &frontierResult{MemBefore: redisInfo(ctx, c)["used_memory"]}
	start := time.Now()
	urls := make([]string, 0, opt.Batch)
	for i := 0; i < opt.URLs; i++ {
		// A shop-like path: the host's index varies fastest, so that every batch touches
		// many hosts, as a crawl's emits do.
		urls = append(urls, fmt.Sprintf("http://h%d.test/p/%d?page=%d", i%opt.Hosts, i/opt.Hosts, i%7))
		if len(urls) == opt.Batch || i == opt.URLs-1 {
			if _, err := handlers.Seed(ctx, c, sp, urls); err != nil {
				return nil, err
			}
			urls = urls[:0]
			if (i+1)%(opt.URLs/10+1) < opt.Batch {
				fmt.Fprintf(log, "bench-frontier: %d URLs seeded\n", i+1)
			}
		}
	}
	res.Took = time.Since(start)
	res.MemAfter = redisInfo(ctx, c)["used_memory"]

	// One status read, as `streamcrawl status` makes it.
	before := redisInfo(ctx, c)["total_commands_processed"]
	t := time.Now()
	l, err := streams.ReadLayout(ctx, c, sp.Name)
	if err != nil {
		return nil, err
	}
	st, err := inspect.ReadStatus(ctx, c, l)
	if err != nil {
		return nil, err
	}
	res.StatusTook = time.Since(t)
	res.StatusCmds = redisInfo(ctx, c)["total_commands_processed"] - before - 1 // the INFO itself
	res.Waiting, res.Seen = st.Frontier, st.Seen

	// One exporter scrape, through a fresh sampler (nothing cached).
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewCrawlCollector(ctx, metrics.NewSampler(c, 0), metrics.Crawls(sp.Name), nil))
	before = redisInfo(ctx, c)["total_commands_processed"]
	t = time.Now()
	if _, err := reg.Gather(); err != nil {
		return nil, err
	}
	res.ScrapeTook = time.Since(t)
	res.ScrapeCmds = redisInfo(ctx, c)["total_commands_processed"] - before - 1

	deep, err := inspect.ReadDeep(ctx, c, l)
	if err != nil {
		return nil, err
	}
	res.DedupBytes = deep.SeenBytes
	return res, nil
}

func printFrontier(w io.Writer, opt frontierOptions, r *frontierResult) {
	n := float64(max(opt.URLs, 1))
	grown := r.MemAfter - r.MemBefore
	fmt.Fprintf(w, "streamcrawl bench-frontier: %d URLs over %d hosts seeded, nothing fetched (capacity %d: 0 is the default)\n", opt.URLs, opt.Hosts, opt.Capacity)
	fmt.Fprintf(w, "  waiting / seen (status)       %d / %d\n", r.Waiting, r.Seen)
	fmt.Fprintf(w, "  seed time                     %.1f s (%.0f URLs/s)\n", r.Took.Seconds(), n/r.Took.Seconds())
	fmt.Fprintf(w, "  used_memory growth            %.1f MB, %.1f B per URL (dedup included)\n", grown/1e6, grown/n)
	fmt.Fprintf(w, "  of which dedup (exact scan)   %.1f MB, %.1f B per URL\n", float64(r.DedupBytes)/1e6, float64(r.DedupBytes)/n)
	fmt.Fprintf(w, "  frontier (the rest)           %.1f B per waiting URL\n", (grown-float64(r.DedupBytes))/float64(max(r.Waiting, 1)))
	fmt.Fprintf(w, "  one status read               %.0f Redis commands, %.1f ms\n", r.StatusCmds, float64(r.StatusTook.Microseconds())/1000)
	fmt.Fprintf(w, "  one exporter scrape           %.0f Redis commands, %.1f ms\n", r.ScrapeCmds, float64(r.ScrapeTook.Microseconds())/1000)
}
