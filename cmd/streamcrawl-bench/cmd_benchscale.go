package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// scaleOptions configure a scaling benchmark.
type scaleOptions struct {
	Pages       int
	Latency     time.Duration
	Fetchers    []int
	Concurrency int
	Timeout     time.Duration
	RedisURL    string
	Dir         string
	Plot        string
}

// scaleRun is one crawl of the scaling benchmark.
type scaleRun struct {
	Fetchers   int
	Pages      int64
	Stored     int64
	Took       time.Duration
	Steady     float64 // pages/s between 10% and 90% of the pages
	WorkerCPU  float64 // seconds, every worker process
	RedisCPU   float64 // seconds
	RedisCmds  float64
	Done       bool
	FetchedAll bool
}

func (a *app) benchScaleCommand() *cobra.Command {
	opt := scaleOptions{}
	var fetchers string
	cmd := &cobra.Command{
		Use:   "bench-scale [--fetchers 1,2,4,8] [--latency 200ms] [--pages N]",
		Short: "Crawl a slow demo shop with 1, 2, 4, 8 fetch processes and report pages/s against linear",
		Long: `bench-scale serves the demo shop in a child process, every answer after --latency, and
crawls it once per entry of --fetchers with that many fetch processes plus one parse and
one store process (children of this binary) on a real Redis, each fetch process with
--concurrency requests in flight. It reports, per run, the steady pages/s (between 10%
and 90% of the pages fetched), its share of linear scaling from the first run, the
workers' CPU per 1000 pages and Redis CPU and commands per page. --plot draws pages/s
against fetch processes (with the linear line) as a PNG.

Without --redis it starts a throw-away redis-server from PATH.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			for _, f := range strings.Split(fetchers, ",") {
				n, err := strconv.Atoi(strings.TrimSpace(f))
				if err != nil || n < 1 {
					return fmt.Errorf("bench-scale: --fetchers %q: want a list of counts like 1,2,4,8", fetchers)
				}
				opt.Fetchers = append(opt.Fetchers, n)
			}
			var done func()
			var err error
			if opt.RedisURL, opt.Dir, done, err = a.benchEnv(ctx, "bench-scale", false); err != nil {
				return err
			}
			defer done()
			site, base, err := startSiteChild(ctx, opt.Pages, "--latency", opt.Latency.String())
			if err != nil {
				return err
			}
			defer site.stop()
			var runs []scaleRun
			for _, n := range opt.Fetchers {
				r, err := runScale(ctx, opt, base, n)
				if err != nil {
					return err
				}
				runs = append(runs, *r)
				printScaleRun(a.Stdout, opt, runs)
			}
			if opt.Plot != "" {
				if err := writeScalePlot(opt.Plot, runs); err != nil {
					return err
				}
				fmt.Fprintf(a.Stdout, "plot written to %s\n", opt.Plot)
			}
			return nil
		},
	}
	a.RedisFlags(cmd, false)
	cmd.Flags().IntVar(&opt.Pages, "pages", 3000, "pages of the demo shop")
	cmd.Flags().DurationVar(&opt.Latency, "latency", 200*time.Millisecond, "how long each page takes to answer")
	cmd.Flags().StringVar(&fetchers, "fetchers", "1,2,4,8", "fetch processes of each run")
	cmd.Flags().IntVar(&opt.Concurrency, "concurrency", 32, "requests in flight per fetch process")
	cmd.Flags().DurationVar(&opt.Timeout, "timeout", 10*time.Minute, "give up on a run after this long")
	cmd.Flags().StringVar(&opt.Plot, "plot", "", "write a PNG plot of pages/s against fetch processes to this file")
	return cmd
}

// scaleSpider is the demo shop's spider with no per-host limit (the site is one host)
// and conc requests in flight per fetch process.
func scaleSpider(base string, pages, conc int) string {
	return shopSpider("scale", base, pages, conc, false)
}

// runScale crawls the site at base once with n fetch processes.
func runScale(ctx context.Context, opt scaleOptions, base string, n int) (*scaleRun, error) {
	ctx, cancel := context.WithTimeout(ctx, opt.Timeout)
	defer cancel()
	w, err := startWorkers(ctx, opt.RedisURL, opt.Dir, "scale", scaleSpider(base, opt.Pages, opt.Concurrency), n,
		fmt.Sprintf("-%d", n), "error")
	if err != nil {
		return nil, err
	}
	defer w.c.Close()
	c, start := w.c, w.start
	l, err := streams.ReadLayout(ctx, c, w.sp.Name)
	if err != nil {
		return nil, err
	}
	// Sample pages fetched while the workers run, for the steady rate.
	samples, failed := sampleWhile(w.wait, start, 100*time.Millisecond, func() int64 { return pagesFetched(ctx, c, l) })
	took := time.Since(start)
	if len(failed) > 0 {
		return nil, fmt.Errorf("bench-scale: workers failed (logs in %s): %v", opt.Dir, failed)
	}
	redisCPU, redisCmds := w.redisCost(ctx)
	st, err := inspect.ReadStatus(ctx, c, l)
	if err != nil {
		return nil, err
	}
	var cpu float64
	for _, p := range w.procs {
		cpu += (p.ProcessState.UserTime() + p.ProcessState.SystemTime()).Seconds()
	}
	pages := st.Stats["pages_fetched"]
	return &scaleRun{Fetchers: n, Pages: pages, Stored: st.ItemsStored, Took: took,
		Steady: steadyRate(samples, pages), WorkerCPU: cpu, Done: st.Done, RedisCPU: redisCPU, RedisCmds: redisCmds}, nil
}

// pagesFetched reads the crawl's pages_fetched counter: one HGET per partition (the
// full status costs Redis far more, and polling it would count in the figures).
func pagesFetched(ctx context.Context, c redis.UniversalClient, l streams.Layout) int64 {
	var n int64
	for _, k := range l.Parts {
		v, _ := c.HGet(ctx, k.Stats, "pages_fetched").Int64()
		n += v
	}
	return n
}

// scaleSample is the pages fetched by a time since the seed.
type scaleSample struct {
	at    time.Duration
	pages int64
}

// sampleWhile runs wait (which returns what failed) and samples pages every interval
// until it returns, each sample timed from start.
func sampleWhile(wait func() []string, start time.Time, every time.Duration, pages func() int64) ([]scaleSample, []string) {
	waited := make(chan []string, 1)
	go func() { waited <- wait() }()
	var samples []scaleSample
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case failed := <-waited:
			return samples, failed
		case <-tick.C:
			samples = append(samples, scaleSample{time.Since(start), pages()})
		}
	}
}

// steadyRate is the pages/s between the samples where 10% and 90% of total were
// fetched: the crawl's pace once its frontier is wide enough to keep every fetcher
// busy, and before its tail. 0 when there are too few samples.
func steadyRate(samples []scaleSample, total int64) float64 {
	lo, hi := -1, -1
	for i, s := range samples {
		if lo < 0 && s.pages >= total/10 {
			lo = i
		}
		if hi < 0 && s.pages >= total*9/10 {
			hi = i
		}
	}
	if lo < 0 || hi <= lo {
		return 0
	}
	a, b := samples[lo], samples[hi]
	return float64(b.pages-a.pages) / (b.at - a.at).Seconds()
}

func printScaleRun(w io.Writer, opt scaleOptions, runs []scaleRun) {
	r := runs[len(runs)-1]
	if len(runs) == 1 {
		fmt.Fprintf(w, "streamcrawl bench-scale: demo shop of %d pages answering in %s, %d requests in flight per fetch process, 1 parse, 1 store\n",
			opt.Pages, opt.Latency, opt.Concurrency)
		fmt.Fprintf(w, "  %-8s %-8s %-12s %-10s %-16s %-16s %-14s %s\n", "fetchers", "pages", "steady p/s", "of linear", "worker CPU/1000", "Redis µs/page", "cmds/page", "wall")
	}
	base := runs[0].Steady / float64(runs[0].Fetchers)
	share := 0.0
	if base > 0 {
		share = r.Steady / (base * float64(r.Fetchers))
	}
	pages := float64(max(r.Pages, 1))
	fmt.Fprintf(w, "  %-8d %-8d %-12.0f %-10s %-16.2f %-16.0f %-14.1f %.1fs\n", r.Fetchers, r.Pages, r.Steady,
		fmt.Sprintf("%.0f%%", 100*share), r.WorkerCPU/pages*1000, r.RedisCPU/pages*1e6, r.RedisCmds/pages, r.Took.Seconds())
}
