package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// The processes bench-latency measures, each with its Redis behind the proxy.
const (
	latencyFetch = "fetch" // one fetch process; parse and store go to Redis direct
	latencyCrawl = "crawl" // one crawl --redis process, every stage
)

// latencyOptions are bench-latency's settings.
type latencyOptions struct {
	Hosts, Pages, PageSize, PerHost, Concurrency, Rounds int
	Latencies                                            []time.Duration // round trips added, one row each
	Modes                                                []string        // latencyFetch, latencyCrawl
	Timeout                                              time.Duration   // of each crawl
	RedisURL, Dir                                        string
}

// latencyRun is one crawl of a bench-latency run.
type latencyRun struct {
	Mode   string
	Added  time.Duration // round trip added by the proxy
	RTT    time.Duration // median PING through the proxy, read before the crawl
	Round  int           // from 1
	Pages  int64         // pages_fetched at the end
	Wall   time.Duration // from the start of the process(es) to their exit
	Steady float64       // the shops' answers a second between 10% and 90% of them (steadyRate)
	Load   string        // load averages when it ended
	Calls  tapCounts     // the measured process's Redis commands and round trips
}

func (a *app) benchLatencyCommand() *cobra.Command {
	var o latencyOptions
	cmd := &cobra.Command{
		Use:   "bench-latency [--hosts N] [--pages N] [--page-size BYTES] [--per-host N] [--rounds N] [--latencies D,D,...] [--modes fetch,crawl]",
		Short: "Crawl demo shops with Redis behind a proxy that adds round-trip time, and print pages/s against none",
		Long: `bench-latency measures how much of its speed a crawl keeps when Redis is on another
machine. It serves --hosts demo shops (one port of 127.0.0.1 each, so one host each to
the crawl, linked to each other, pages padded to --page-size, robots.txt obeyed) and puts
a TCP proxy between the measured process and Redis that adds each of --latencies to
every round trip (on the replies, to the microsecond). For each added round trip it
crawls the shops with the spider's per-host limit set to --per-host:

  fetch   one fetch process whose Redis goes through the proxy, with one parse and one
          store process going to Redis direct (the fetch process is the one measured)
  crawl   one "crawl --redis" process (every stage) whose Redis goes through the proxy

It prints a row per crawl (pages fetched, wall time, steady pages/s: the pace of the
shops' answers between 10% and 90% of them, without start-up and tail; the PING round
trip measured through the proxy before it; the measured process's round trips to Redis
and commands a page, counted by a relay in front of the proxy: a round trip is a write
of one command or of a pipeline), then per process and added round trip the median, least and most
steady pages/s over --rounds, and the median's share of the same process's with none
added. Rounds run the round trips up then down (0, 1ms, 2ms, 2ms, 1ms, 0, ...) so that a
drift in the machine's load shows. Last, for the first round, the round trips and
commands a page by kind: what the writes held ("XACK+XREADGROUP": a pipeline of both),
and an EVALSHA by its script's SHA. The relay and the proxy run in this process; with
nothing added they still cost a hop each, so every row, the first included, goes
through them.

Without --redis it starts a throw-away redis-server from PATH; --redis must name one
server (not a cluster: the proxy stands for one connection to one server).`,
		Args: cobra.NoArgs,
		RunE: a.inBenchEnv("bench-latency", nil, func(ctx context.Context, url, dir string) error {
			o.RedisURL, o.Dir = url, dir
			_, err := a.benchLatency(ctx, o)
			return err
		}),
	}
	a.RedisFlags(cmd, false)
	cmd.Flags().IntVar(&o.Hosts, "hosts", 4, "demo shops, one host each")
	cmd.Flags().IntVar(&o.Pages, "pages", 2000, "pages of each shop")
	cmd.Flags().IntVar(&o.PageSize, "page-size", 25000, "bytes per page (0: as they are, 9-20 KB)")
	cmd.Flags().IntVar(&o.PerHost, "per-host", 8, "per_host_concurrency of the spider")
	cmd.Flags().IntVar(&o.Concurrency, "concurrency", 64, "requests in flight per process (the spider's concurrency)")
	cmd.Flags().IntVar(&o.Rounds, "rounds", 2, "times each process crawls at each added round trip")
	cmd.Flags().DurationSliceVar(&o.Latencies, "latencies", []time.Duration{0, 500 * time.Microsecond, time.Millisecond, 2 * time.Millisecond},
		"round trips added to Redis, one row each (the first is the reference: 0 unless told)")
	cmd.Flags().StringSliceVar(&o.Modes, "modes", []string{latencyFetch, latencyCrawl}, "processes measured: fetch, crawl or both")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 10*time.Minute, "give up on a crawl after this long")
	return cmd
}

// benchLatency runs the crawls, prints a row for each and then the summary, and returns
// them in the order they ran.
func (a *app) benchLatency(ctx context.Context, o latencyOptions) ([]latencyRun, error) {
	if len(o.Latencies) == 0 || o.Rounds < 1 || o.Hosts < 1 {
		return nil, fmt.Errorf("bench-latency: needs a latency, a round and a host at least")
	}
	for _, m := range o.Modes {
		if m != latencyFetch && m != latencyCrawl {
			return nil, fmt.Errorf("bench-latency: --modes %q: want fetch or crawl", m)
		}
	}
	opt, err := redis.ParseURL(o.RedisURL)
	if err != nil {
		return nil, err
	}
	proxy, err := streamstest.NewFaultProxy(opt.Addr)
	if err != nil {
		return nil, err
	}
	defer proxy.Close()
	// The measured process → the tap (counting its commands and round trips) → the
	// proxy (adding the round trip) → Redis.
	tap, err := newRespTap(proxy.Addr)
	if err != nil {
		return nil, err
	}
	defer tap.close()
	throughURL, err := viaProxy(o.RedisURL, tap.Addr)
	if err != nil {
		return nil, err
	}
	web, err := serveShops(ctx, o.Hosts, o.Pages, o.PageSize)
	if err != nil {
		return nil, err
	}
	defer web.close()
	c, err := streams.Connect(ctx, streams.ClientOptions{URL: o.RedisURL})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	popt, err := redis.ParseURL(throughURL)
	if err != nil {
		return nil, err
	}
	pinger := redis.NewClient(popt)
	defer pinger.Close()

	const name = "latency"
	yaml := strings.Replace(shopSpider(name, web.bases[0], o.Hosts*o.Pages, o.Concurrency, true), "# per_host_concurrency: default",
		fmt.Sprintf("per_host_concurrency: %d", o.PerHost), 1)
	spiderPath := filepath.Join(o.Dir, name+".yaml")
	if err := os.WriteFile(spiderPath, []byte(yaml), 0o644); err != nil {
		return nil, err
	}
	fmt.Fprintf(a.Stdout, "bench-latency: demo shops (hosts) %d, each of %d pages of about %d bytes; per-host limit %d, %d in flight a process, robots.txt obeyed; load %s\n",
		o.Hosts, o.Pages, o.PageSize, o.PerHost, o.Concurrency, loadAverage())
	var runs []latencyRun
	for r := range o.Rounds {
		order := slices.Clone(o.Latencies)
		if r%2 == 1 {
			slices.Reverse(order)
		}
		for _, added := range order {
			if err := proxy.Heal(); err != nil {
				return nil, err
			}
			if added > 0 {
				if err := proxy.Latency(added, 0); err != nil {
					return nil, err
				}
			}
			rtt, err := medianPing(ctx, pinger, 200)
			if err != nil {
				return nil, err
			}
			for _, mode := range o.Modes {
				run, err := a.latencyCrawl(ctx, o, c, web, tap, mode, name, yaml, spiderPath, throughURL)
				if err != nil {
					return nil, err
				}
				run.Added, run.RTT, run.Round = added, rtt, r+1
				runs = append(runs, run)
				printLatencyRun(a.Stdout, run, len(runs) == 1)
			}
		}
	}
	fmt.Fprintf(a.Stdout, "load at the end %s\n\n", loadAverage())
	printLatencySummary(a.Stdout, o, runs)
	fmt.Fprintln(a.Stdout)
	for _, r := range runs {
		if r.Round == 1 {
			printTapCounts(a.Stdout, fmt.Sprintf("%s process, %s added", r.Mode, r.Added), r.Calls, r.Pages)
		}
	}
	return runs, nil
}

// latencyCrawl crawls the shops once with mode's process behind the proxy at throughURL.
func (a *app) latencyCrawl(ctx context.Context, o latencyOptions, c *streams.Client, web *shops, tap *respTap, mode, name, yaml, spiderPath, throughURL string) (latencyRun, error) {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	run := latencyRun{Mode: mode}
	items := filepath.Join(o.Dir, "items.jsonl")
	// A new items file each crawl: the JSONL sink skips the items a file already holds.
	if err := os.Remove(items); err != nil && !os.IsNotExist(err) {
		return run, err
	}
	if err := resetCrawl(ctx, c, name); err != nil {
		return run, err
	}
	var start time.Time
	var wait func() []string
	served := web.site.TotalRequests()
	tap.take() // the PINGs before
	switch mode {
	case latencyFetch:
		w, err := startWorkersWith(ctx, o.RedisURL, o.Dir, name, yaml, 1, "", "error",
			workerOptions{fetchURL: throughURL, args: []string{"--retry-backoff", "100ms"}})
		if err != nil {
			return run, err
		}
		defer w.c.Close()
		start, wait = w.start, w.wait
	case latencyCrawl:
		cmd, err := selfCommand(ctx, "crawl", "--redis", throughURL, "--fresh", "--spider", spiderPath, "--out", items,
			"--log-level", "error", "--retry-backoff", "100ms")
		if err != nil {
			return run, err
		}
		logf, err := os.Create(filepath.Join(o.Dir, "crawl.log"))
		if err != nil {
			return run, err
		}
		defer logf.Close()
		cmd.Stdout, cmd.Stderr = logf, logf
		start = time.Now()
		if err := cmd.Start(); err != nil {
			return run, err
		}
		wait = func() []string {
			if err := cmd.Wait(); err != nil {
				return []string{fmt.Sprintf("crawl: %v (log: %s)", err, tail(filepath.Join(o.Dir, "crawl.log")))}
			}
			return nil
		}
	}
	// Sample the shops' requests while the crawl runs, for the steady rate: the crawl's
	// own counters reach Redis once a second, too coarse for a crawl of seconds.
	samples, failed := sampleWhile(wait, start, 20*time.Millisecond, func() int64 { return web.site.TotalRequests() - served })
	run.Wall = time.Since(start)
	run.Calls = tap.take()
	if len(failed) > 0 {
		return run, fmt.Errorf("bench-latency: %s crawl failed (logs in %s): %v", mode, o.Dir, failed)
	}
	l, err := streams.ReadLayout(ctx, c, name)
	if err != nil {
		return run, err
	}
	run.Pages = pagesFetched(ctx, c, l)
	run.Steady = steadyRate(samples, web.site.TotalRequests()-served)
	run.Load = loadAverage()
	return run, nil
}

// viaProxy returns the Redis URL redisURL with its host:port replaced by addr's.
func viaProxy(redisURL, addr string) (string, error) {
	u, err := url.Parse(redisURL)
	if err != nil {
		return "", err
	}
	u.Host = addr
	return u.String(), nil
}

// medianPing returns the median round trip of n PINGs on rdb, one after the other.
func medianPing(ctx context.Context, rdb *redis.Client, n int) (time.Duration, error) {
	took := make([]time.Duration, n)
	for i := range took {
		began := time.Now()
		if err := rdb.Ping(ctx).Err(); err != nil {
			return 0, fmt.Errorf("bench-latency: PING through the proxy: %w", err)
		}
		took[i] = time.Since(began)
	}
	slices.Sort(took)
	return took[n/2], nil
}

func printLatencyRun(w io.Writer, r latencyRun, header bool) {
	if header {
		fmt.Fprintf(w, "| %-7s | %5s | %9s | %5s | %7s | %7s | %10s | %9s | %10s | %-14s |\n| ------- | ----: | --------: | ----: | ------: | ------: | ---------: | --------: | ---------: | -------------- |\n",
			"process", "round", "added RTT", "PING", "pages", "wall s", "pages/s", "RT/page", "cmds/page", "load 1/5/15")
	}
	var cmds int64
	for _, n := range r.Calls.Cmds {
		cmds += n
	}
	pages := float64(max(r.Pages, 1))
	fmt.Fprintf(w, "| %-7s | %5d | %9s | %5.2f | %7d | %7.1f | %10.0f | %9.2f | %10.2f | %-14s |\n",
		r.Mode, r.Round, r.Added, msOf(r.RTT), r.Pages, r.Wall.Seconds(), r.Steady, float64(r.Calls.Writes)/pages, float64(cmds)/pages, r.Load)
}

// printLatencySummary prints, per process and added round trip, the steady pages/s over
// the rounds (median, least, most), the median PING, and the median's share of the
// process's at the first added round trip (the reference, 0 unless told).
func printLatencySummary(w io.Writer, o latencyOptions, runs []latencyRun) {
	fmt.Fprintf(w, "| %-7s | %9s | %8s | %7s | %14s | %14s | %12s |\n| ------- | --------: | -------: | ------: | -------------: | -------------: | -----------: |\n",
		"process", "added RTT", "PING ms", "pages", "median pages/s", "least-most", "of "+o.Latencies[0].String())
	for _, mode := range o.Modes {
		var ref float64
		for i, added := range o.Latencies {
			var rates []float64
			var pings []time.Duration
			var pages []int64
			for _, r := range runs {
				if r.Mode == mode && r.Added == added {
					rates, pings, pages = append(rates, r.Steady), append(pings, r.RTT), append(pages, r.Pages)
				}
			}
			if len(rates) == 0 {
				continue
			}
			slices.Sort(rates)
			slices.Sort(pings)
			slices.Sort(pages)
			med := median(rates)
			if i == 0 {
				ref = med
			}
			share := "-"
			if ref > 0 {
				share = fmt.Sprintf("%.0f%%", 100*med/ref)
			}
			count := fmt.Sprint(pages[0])
			if pages[0] != pages[len(pages)-1] {
				count = fmt.Sprintf("%d-%d", pages[0], pages[len(pages)-1])
			}
			fmt.Fprintf(w, "| %-7s | %9s | %8.2f | %7s | %14.0f | %14s | %12s |\n", mode, added, msOf(pings[len(pings)/2]), count,
				med, fmt.Sprintf("%.0f-%.0f", rates[0], rates[len(rates)-1]), share)
		}
	}
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
