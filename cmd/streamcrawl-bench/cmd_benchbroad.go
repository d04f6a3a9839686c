package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/streamcrawl/streamcrawl/spiders/broadsite"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// broadOptions configure a broad-crawl benchmark.
type broadOptions struct {
	Hosts, Pages int
	Latency      time.Duration
	Delay        time.Duration
	Tolerance    time.Duration
	Fetchers     int
	Partitions   int
	Timeout      time.Duration
	RedisURL     string
	Dir          string
	Record       string // where to write the run's results as JSON ("": nowhere)
}

// broadRecord is a bench-broad run as --record writes it.
type broadRecord struct {
	Hosts              int     `json:"hosts"`
	PagesPerHost       int     `json:"pages_per_host"`
	Fetchers           int     `json:"fetchers"`
	LatencyS           float64 `json:"latency_s"`
	DelayS             float64 `json:"delay_s"`
	Pages              int     `json:"pages"` // distinct pages fetched
	Duplicates         int     `json:"duplicates"`
	Missing            int     `json:"missing"`
	WallS              float64 `json:"wall_s"`
	SpanS              float64 `json:"span_s"`
	LimitS             float64 `json:"limit_s"`
	SpanOverLimit      float64 `json:"span_over_limit"`
	MedianGapS         float64 `json:"median_gap_s"`
	MedianGapOverDelay float64 `json:"median_gap_over_delay"`
	MinGapS            float64 `json:"min_gap_s"`
	Gaps               int     `json:"gaps"`
	ShortGaps          int     `json:"gaps_under_delay"` // below delay − tolerance
	ToleranceS         float64 `json:"tolerance_s"`
	MaxInFlight        int     `json:"max_in_flight"`
	RedisUSPerPage     float64 `json:"redis_us_per_page"`
	RedisCmdsPerPage   float64 `json:"redis_commands_per_page"`
}

// broadRecordOf is r, a run with opt, as recorded.
func broadRecordOf(opt broadOptions, r *broadResult) *broadRecord {
	pages := float64(max(r.Pages, 1))
	return &broadRecord{Hosts: opt.Hosts, PagesPerHost: opt.Pages, Fetchers: opt.Fetchers, LatencyS: opt.Latency.Seconds(),
		DelayS: opt.Delay.Seconds(), Pages: r.Pages, Duplicates: r.Duplicates, Missing: r.Missing, WallS: r.Took.Seconds(),
		SpanS: r.Span.Seconds(), LimitS: r.Limit.Seconds(), SpanOverLimit: r.Span.Seconds() / r.Limit.Seconds(),
		MedianGapS: r.MedianGap.Seconds(), MedianGapOverDelay: r.MedianGap.Seconds() / opt.Delay.Seconds(),
		MinGapS: r.MinGap.Seconds(), Gaps: r.Gaps, ShortGaps: r.ShortGaps, ToleranceS: opt.Tolerance.Seconds(),
		MaxInFlight: r.MaxInFlight, RedisUSPerPage: r.RedisCPU / pages * 1e6, RedisCmdsPerPage: r.RedisCmds / pages}
}

// broadResult is a broad-crawl benchmark's outcome.
type broadResult struct {
	broadsite.Report
	Took        time.Duration
	RedisCPU    float64 // seconds
	RedisCmds   float64
	ShardCPU    map[string]float64 // Redis CPU seconds by cluster master ("" for one server)
	Stored      int64
	RobotsTurns int64
	WorkerRSS   map[string]int64   // peak RSS of each worker process, bytes
	Calls       map[string]float64 // Redis calls by command
}

func (a *app) benchBroadCommand() *cobra.Command {
	opt := broadOptions{}
	cmd := &cobra.Command{
		Use:   "bench-broad [--hosts N] [--pages N] [--delay D] [--record FILE]",
		Short: "Crawl many polite hosts on loopback with worker processes and report the span against the politeness limit",
		Long: `bench-broad serves a broad web on loopback (--hosts hosts, each on its own 127.0.X.Y
address, --pages pages each, every answer after --latency, a robots.txt that is obeyed),
crawls it with per_host_concurrency 1 and per_host_delay --delay using --fetchers fetch
processes and one parse and one store process on a real Redis, and reports what the
hosts saw: the span of the crawl against the least the delay allows ((pages−1)×delay,
the busiest host's), gaps between two requests to a host shorter than the delay (robots.txt
included), the most requests in flight at one host, pages fetched twice or never, and
Redis CPU and commands per page.

Without --redis it starts a throw-away redis-server from PATH. --record FILE writes the
figures as JSON with the run's conditions (date, Go version, GOMAXPROCS, load average at
start, arguments), for the plots command.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cond := conditionsNow(cmd)
			return a.inBenchEnv("bench-broad", nil, func(ctx context.Context, url, dir string) error {
				opt.RedisURL, opt.Dir = url, dir
				res, err := runBroad(ctx, opt, a.Stderr)
				if err != nil {
					return err
				}
				printBroad(a.Stdout, opt, res)
				if opt.Record == "" {
					return nil
				}
				return writeRecord(opt.Record, &record{Kind: recordBroad, Conditions: cond, Broad: broadRecordOf(opt, res)})
			})(cmd, args)
		},
	}
	a.RedisFlags(cmd, false)
	cmd.Flags().IntVar(&opt.Hosts, "hosts", 300, "hosts (one loopback address each)")
	cmd.Flags().IntVar(&opt.Pages, "pages", 40, "pages per host, home page included")
	cmd.Flags().DurationVar(&opt.Latency, "latency", 20*time.Millisecond, "how long each page takes to answer")
	cmd.Flags().DurationVar(&opt.Delay, "delay", 500*time.Millisecond, "per_host_delay of the spider")
	cmd.Flags().DurationVar(&opt.Tolerance, "tolerance", 10*time.Millisecond, "a gap counts as short below delay minus this")
	cmd.Flags().IntVar(&opt.Fetchers, "fetchers", 2, "fetch processes")
	cmd.Flags().IntVar(&opt.Partitions, "partitions", 0, "partitions of the crawl's keys (spread over a Redis Cluster's shards; 0: the spider's default)")
	cmd.Flags().DurationVar(&opt.Timeout, "timeout", 10*time.Minute, "give up after this long")
	cmd.Flags().StringVar(&opt.Record, "record", "", "write the run's results and conditions to this JSON file")
	return cmd
}

// runBroad runs the benchmark (see benchBroadCommand).
func runBroad(ctx context.Context, opt broadOptions, log io.Writer) (*broadResult, error) {
	ctx, cancel := context.WithTimeout(ctx, opt.Timeout)
	defer cancel()
	web, err := broadsite.Start(broadsite.Config{Hosts: opt.Hosts, Pages: opt.Pages, Latency: opt.Latency,
		Robots: "User-agent: *\nDisallow: /private/\n"})
	if err != nil {
		return nil, err
	}
	defer web.Close()
	spider := web.SpiderYAML(opt.Delay)
	if opt.Partitions > 0 {
		spider += fmt.Sprintf("  partitions: %d\n", opt.Partitions) // the YAML ends in its settings
	}
	w, err := startWorkers(ctx, opt.RedisURL, opt.Dir, "broad", spider, opt.Fetchers, "", "warn")
	if err != nil {
		return nil, err
	}
	defer w.c.Close()
	rss := w.watchRSS()
	failed := w.wait()
	peaks := rss()
	took := time.Since(w.start)
	if len(failed) > 0 {
		return nil, fmt.Errorf("bench-broad: workers failed (logs in %s): %v", opt.Dir, failed)
	}
	redisCPU, redisCmds := w.redisCost(ctx)
	l, err := streams.ReadLayout(ctx, w.c, w.sp.Name)
	if err != nil {
		return nil, err
	}
	st, err := inspect.ReadStatus(ctx, w.c, l)
	if err != nil {
		return nil, err
	}
	res := &broadResult{Report: web.Report(opt.Delay, opt.Tolerance), Took: took, RedisCPU: redisCPU,
		RedisCmds: redisCmds, ShardCPU: shardCPU(w.shards, w.after), Stored: st.ItemsStored, RobotsTurns: st.Stats["robots_turns"], WorkerRSS: peaks, Calls: w.callsSince(ctx)}
	return res, nil
}

func printBroad(w io.Writer, opt broadOptions, r *broadResult) {
	pages := float64(max(r.Pages, 1))
	fmt.Fprintf(w, "streamcrawl bench-broad: %d hosts x %d pages, latency %s, per-host delay %s, 1 per host, %d fetch processes\n",
		opt.Hosts, opt.Pages, opt.Latency, opt.Delay, opt.Fetchers)
	fmt.Fprintf(w, "  pages fetched                 %d of %d (%d twice, %d never), %d items stored\n",
		r.Pages, opt.Hosts*opt.Pages, r.Duplicates, r.Missing, r.Stored)
	fmt.Fprintf(w, "  span / limit                  %.2f s / %.2f s = %.2f\n", r.Span.Seconds(), r.Limit.Seconds(), r.Span.Seconds()/r.Limit.Seconds())
	fmt.Fprintf(w, "  wall time (seed to done)      %.2f s\n", r.Took.Seconds())
	fmt.Fprintf(w, "  gaps below delay - %s     %d of %d (smallest %s, median %s)\n", opt.Tolerance, r.ShortGaps, r.Gaps,
		r.MinGap.Round(time.Millisecond), r.MedianGap.Round(time.Millisecond))
	fmt.Fprintf(w, "  most in flight at one host    %d\n", r.MaxInFlight)
	fmt.Fprintf(w, "  requests (robots.txt incl.)   %d (robots.txt fetches that used a host's turn: %d)\n", r.Requests, r.RobotsTurns)
	fmt.Fprintf(w, "  Redis CPU per page            %.0f µs\n", r.RedisCPU/pages*1e6)
	fmt.Fprintf(w, "  Redis commands per page       %.1f\n", r.RedisCmds/pages)
	if len(r.ShardCPU) > 1 {
		printShardCPU(w, r.ShardCPU, pages)
	}
	printCalls(w, r.Calls, pages)
	names := slices.Sorted(maps.Keys(r.WorkerRSS))
	fmt.Fprintf(w, "  worker peak RSS              ")
	for _, n := range names {
		fmt.Fprintf(w, " %s %.0f MiB", n, float64(r.WorkerRSS[n])/(1<<20))
	}
	fmt.Fprintln(w)
}

// printCalls prints the Redis calls per page by command, then the server's time in
// them (wall µs per page; a script's includes the commands it runs), each from most to
// least, down to 0.05 calls and 0.5 µs.
func printCalls(w io.Writer, calls map[string]float64, pages float64) {
	var names []string
	for c := range calls {
		if !strings.HasSuffix(c, usecSuffix) {
			names = append(names, c)
		}
	}
	for _, by := range []struct {
		label, suffix, format string
		least                 float64
	}{{"by command, per page         ", "", " %s %.2f", 0.05}, {"µs by command, per page      ", usecSuffix, " %s %.1f", 0.5}} {
		slices.SortFunc(names, func(a, b string) int { return cmp.Compare(calls[b+by.suffix], calls[a+by.suffix]) })
		fmt.Fprintf(w, "  %s", by.label)
		for _, c := range names {
			if v := calls[c+by.suffix] / pages; v >= by.least {
				fmt.Fprintf(w, by.format, c, v)
			}
		}
		fmt.Fprintln(w)
	}
}

// printShardCPU prints each cluster master's Redis CPU per page and the busiest one's
// against the mean.
func printShardCPU(w io.Writer, cpu map[string]float64, pages float64) {
	var sum, most float64
	addrs := slices.Sorted(maps.Keys(cpu))
	fmt.Fprintf(w, "  Redis CPU per page by shard  ")
	for _, a := range addrs {
		fmt.Fprintf(w, " %s %.0f µs", a, cpu[a]/pages*1e6)
		sum, most = sum+cpu[a], max(most, cpu[a])
	}
	fmt.Fprintf(w, "\n  busiest shard / mean          %.2f\n", most/(sum/float64(len(cpu))))
}
