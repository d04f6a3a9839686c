package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// memoryOptions are bench-memory's settings.
type memoryOptions struct {
	Pages    int
	Interval time.Duration
	Timeout  time.Duration
	Record   string // where to write the run's results as JSON ("": nowhere)
}

// memoryRecord is a bench-memory run as --record writes it.
type memoryRecord struct {
	Pages          int            `json:"pages"` // of the demo shop
	IntervalS      float64        `json:"interval_s"`
	PagesFetched   int64          `json:"pages_fetched"` // at the end
	Items          int64          `json:"items"`         // stored, at the end
	WallS          float64        `json:"wall_s"`
	PeakRSSBytes   int64          `json:"peak_rss_bytes"`   // the crawl's VmHWM at its last sample
	PeakRedisBytes int64          `json:"peak_redis_bytes"` // used_memory_peak at the end (the server is the run's own)
	Samples        []memorySample `json:"samples"`
}

// memorySample is one reading of the crawl process and of Redis during a bench-memory run.
type memorySample struct {
	TS             float64 `json:"t_s"` // since the crawl process started
	Pages          int64   `json:"pages"`
	Items          int64   `json:"items"`
	RSSBytes       int64   `json:"rss_bytes"` // VmRSS of the crawl process
	HWMBytes       int64   `json:"hwm_bytes"` // its VmHWM (peak so far)
	RedisUsedBytes int64   `json:"redis_used_memory_bytes"`
	RedisPeakBytes int64   `json:"redis_used_memory_peak_bytes"`
}

func (a *app) benchMemoryCommand() *cobra.Command {
	var o memoryOptions
	cmd := &cobra.Command{
		Use:   "bench-memory [--pages N] [--interval D] [--record FILE]",
		Short: "Crawl the demo shop in one crawl process and sample its RSS and Redis used_memory as it goes",
		Long: `bench-memory starts a redis-server of its own, the demo shop (--pages pages) and one
"crawl --redis" process (all stages, the per-host limit lifted, 64 requests in flight),
and every --interval reads the crawl process's VmRSS and VmHWM (/proc/PID/status),
Redis's used_memory and used_memory_peak, and the pages fetched and items stored so far
(the crawl's counters in Redis). At the end it prints pages, items, wall time, the
process's peak RSS and Redis's peak memory; --record FILE writes them and the series as
JSON with the run's conditions, for the plots command. Linux only (it reads /proc).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cond := conditionsNow(cmd)
			rec, err := a.benchMemory(cmd.Context(), o)
			if err != nil {
				return err
			}
			printMemory(a.Stdout, rec)
			if o.Record == "" {
				return nil
			}
			return writeRecord(o.Record, &record{Kind: recordMemory, Conditions: cond, Memory: rec})
		},
	}
	cmd.Flags().IntVar(&o.Pages, "pages", 1000000, "pages of the demo shop")
	cmd.Flags().DurationVar(&o.Interval, "interval", 5*time.Second, "time between two samples")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 3*time.Hour, "give up after this long")
	cmd.Flags().StringVar(&o.Record, "record", "", "write the run's results, series and conditions to this JSON file")
	return cmd
}

// benchMemory runs the crawl and samples it (see benchMemoryCommand).
func (a *app) benchMemory(ctx context.Context, o memoryOptions) (*memoryRecord, error) {
	if o.Interval <= 0 {
		return nil, fmt.Errorf("bench-memory: --interval must be positive")
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	rc, redisURL, err := startRedisChild(ctx)
	if err != nil {
		return nil, fmt.Errorf("bench-memory: needs redis-server on PATH: %w", err)
	}
	defer rc.stop()
	site, base, err := startSiteChild(ctx, o.Pages)
	if err != nil {
		return nil, err
	}
	defer site.stop()
	opt, err := redis.ParseURL(redisURL)
	if err != nil {
		return nil, err
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	dir, err := os.MkdirTemp("", "streamcrawl-bench-memory")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	const name = "memory"
	spider := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(spider, []byte(shopSpider(name, base, o.Pages, 64, false)), 0o644); err != nil {
		return nil, err
	}
	crawl, err := selfCommand(ctx, "crawl", "--redis", redisURL, "--fresh", "--spider", spider,
		"--out", filepath.Join(dir, "items.jsonl"), "--log-level", "error", "--retry-backoff", "100ms")
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "crawl.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	crawl.Stdout, crawl.Stderr = logf, logf
	fmt.Fprintf(a.Stdout, "bench-memory: demo shop of %d pages at %s, one crawl process, a sample every %s\n", o.Pages, base, o.Interval)
	start := time.Now()
	if err := crawl.Start(); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- crawl.Wait() }()
	stats := streams.NewKeys(name).Stats
	rec := &memoryRecord{Pages: o.Pages, IntervalS: o.Interval.Seconds()}
	tick := time.NewTicker(o.Interval)
	defer tick.Stop()
	var werr error
sampling:
	for {
		if s, ok := sampleMemory(ctx, rdb, stats, crawl.Process.Pid, time.Since(start)); ok {
			rec.Samples = append(rec.Samples, s)
		}
		select {
		case werr = <-done:
			break sampling
		case <-tick.C:
		}
	}
	rec.WallS = time.Since(start).Seconds()
	if werr != nil {
		return nil, fmt.Errorf("bench-memory: crawl: %w (log: %s)", werr, tail(logPath))
	}
	rec.PagesFetched, rec.Items = crawlCounters(ctx, rdb, stats)
	for _, s := range rec.Samples {
		rec.PeakRSSBytes = max(rec.PeakRSSBytes, s.HWMBytes)
	}
	if info, err := inspect.InfoNumbers(ctx, rdb, "memory"); err == nil {
		rec.PeakRedisBytes = int64(info["used_memory_peak"])
	}
	return rec, nil
}

// sampleMemory reads the process pid's memory, Redis's and the crawl's counters (in the
// hash stats); ok is false when the process has gone (its /proc entry with it).
func sampleMemory(ctx context.Context, rdb *redis.Client, stats string, pid int, at time.Duration) (memorySample, bool) {
	s := memorySample{TS: at.Seconds()}
	st, err := procStatus(pid)
	if err != nil || st["VmRSS"] == 0 {
		return s, false
	}
	s.RSSBytes, s.HWMBytes = st["VmRSS"], st["VmHWM"]
	if info, err := inspect.InfoNumbers(ctx, rdb, "memory"); err == nil {
		s.RedisUsedBytes, s.RedisPeakBytes = int64(info["used_memory"]), int64(info["used_memory_peak"])
	}
	s.Pages, s.Items = crawlCounters(ctx, rdb, stats)
	return s, true
}

// crawlCounters reads pages fetched and items stored from the crawl's counters, as
// status does (0 before the crawl has written them).
func crawlCounters(ctx context.Context, rdb redis.Cmdable, stats string) (pages, items int64) {
	v, err := rdb.HMGet(ctx, stats, "pages_fetched", "items_stored").Result()
	if err != nil {
		return 0, 0
	}
	n := func(x any) int64 {
		s, _ := x.(string)
		i, _ := strconv.ParseInt(s, 10, 64)
		return i
	}
	return n(v[0]), n(v[1])
}

// procStatus returns the kB fields of /proc/PID/status (VmRSS, VmHWM, ...) in bytes.
func procStatus(pid int) (map[string]int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, l := range bytes.Split(b, []byte("\n")) {
		k, v, ok := strings.Cut(string(l), ":")
		if v, isKB := strings.CutSuffix(strings.TrimSpace(v), " kB"); ok && isKB {
			kb, _ := strconv.ParseInt(v, 10, 64)
			out[k] = kb * 1024
		}
	}
	return out, nil
}

func printMemory(w io.Writer, r *memoryRecord) {
	fmt.Fprintf(w, "| %8s | %8s | %7s | %13s | %14s | %7s |\n", "pages", "items", "wall s", "peak RSS MiB", "peak Redis MiB", "samples")
	fmt.Fprintf(w, "| -------: | -------: | ------: | ------------: | -------------: | ------: |\n")
	fmt.Fprintf(w, "| %8d | %8d | %7.1f | %13.1f | %14.1f | %7d |\n", r.PagesFetched, r.Items, r.WallS,
		float64(r.PeakRSSBytes)/(1<<20), float64(r.PeakRedisBytes)/(1<<20), len(r.Samples))
}
