package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/streamcrawl/streamcrawl/cmd/internal/cli"
	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/spiders/demosite"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

func (a *app) benchCommand() *cobra.Command {
	var f cli.RunFlags
	var pages, replicas int
	var bf benchFlags
	cmd := &cobra.Command{
		Use:   "bench [--pages N] [--redis URL | --replicas N] [--per-host] [--page-size BYTES] [--cpuprofile FILE] [--memprofile FILE] [--set KEY=VALUE]",
		Short: "Crawl the demo shop at full speed and print pages/s, CPU, memory and Redis cost",
		Long: `bench starts the demo shop in a child process and crawls it with every stage in this
process, then prints pages/s, this process's CPU seconds per 1000 pages, its peak RSS, and
the Redis server's CPU time and commands per page and bytes per seen URL.

Without --redis it starts a throw-away redis-server from PATH (so the Redis figures are
real); without one there it falls back to the embedded Redis and cannot report them.

The bench spider runs with no per-host limit (per_host_concurrency: -1, like scrapy bench);
--per-host keeps the default per-host settings instead (leases, host queues, slots), the
path a spider with default settings takes. --cpuprofile and --memprofile write pprof
profiles of the crawl (the memory profile counts every allocation: MemProfileRate 4096).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			site, base, err := startSiteChild(ctx, pages, bf.siteArgs()...)
			if err != nil {
				return err
			}
			defer site.stop()
			if a.RedisURL == "" && os.Getenv("REDIS_URL") == "" {
				if rc, url, err := startRedisChild(ctx); err == nil {
					defer rc.stop()
					a.RedisURL = url
					rcs, err := startReplicaChildren(ctx, strings.TrimSuffix(strings.TrimPrefix(url, "redis://"), "/0"), replicas)
					if err != nil {
						return err
					}
					for _, r := range rcs {
						defer r.stop()
					}
				} else if replicas > 0 {
					return fmt.Errorf("--replicas needs redis-server on PATH: %w", err)
				} else {
					a.Log.Warn("no redis-server on PATH; using the embedded Redis (no Redis figures)")
				}
			} else if replicas > 0 {
				return fmt.Errorf("--replicas starts replicas of the redis-server bench starts: not with --redis or $REDIS_URL")
			}
			rdb, err := a.Connect(ctx, false)
			if err != nil {
				return err
			}
			defer rdb.Close()
			yaml := benchSpider(base, pages, bf.perHost) + bf.settingsYAML()
			sp, _, err := spiders.Parse("bench.yaml", []byte(yaml))
			if err != nil {
				return err
			}
			dir, err := os.MkdirTemp("", "streamcrawl-bench")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			f.Out = filepath.Join(dir, "items.jsonl")
			f.UntilDone = true
			before := redisInfo(ctx, rdb)
			stopProfiles, err := bf.start()
			if err != nil {
				return err
			}
			cpu0, gc0 := processCPU(), gcCPU()
			start := time.Now()
			st, err := a.Crawl(ctx, rdb, sp, &f, true, io.Discard)
			if err != nil {
				stopProfiles()
				return err
			}
			took := time.Since(start)
			cpu, gc := processCPU()-cpu0, gcCPU()-gc0
			if err := stopProfiles(); err != nil {
				return err
			}
			after := redisInfo(ctx, rdb)
			if err := readSeenBytes(ctx, rdb, sp.Name, st); err != nil {
				return err
			}
			printBench(a.Stdout, st, took, cpu, gc, before, after, rdb.Embedded == nil)
			return nil
		},
	}
	a.RedisFlags(cmd, true)
	f.Add(cmd, false, handlers.AllStages...)
	f.AddMetrics(cmd) // to measure what serving metrics costs
	cmd.Flags().IntVar(&pages, "pages", 5000, "pages of the demo shop")
	cmd.Flags().IntVar(&replicas, "replicas", 0, "replicas of the redis-server bench starts, synced before the crawl (for --durability replicated)")
	bf.add(cmd)
	_ = cmd.Flags().Set("retry-backoff", "100ms")
	return cmd
}

// benchSpider is the demo shop's spider at full speed, its exact dedup sized for the
// site (twice its pages), as a user sizes capacity for a crawl. With perHost it keeps
// the default per-host settings; without, it lifts the per-host limit.
func benchSpider(base string, pages int, perHost bool) string {
	return shopSpider("bench", base, pages, 64, perHost)
}

// shopSpider is the demo shop's spider called name for the site at base: conc requests
// in flight per fetch process, exact dedup sized for twice pages, and the per-host limit
// lifted (the site is one host) unless perHost keeps the default.
func shopSpider(name, base string, pages, conc int, perHost bool) string {
	limit := "per_host_concurrency: -1"
	if perHost {
		limit = "# per_host_concurrency: default"
	}
	return fmt.Sprintf(`name: %s
start_urls: [%s]
allowed_domains: [127.0.0.1]
follow:
  - links: "a[href]"
items:
%ssettings:
  concurrency: %d
  %s
  allow_networks: [127.0.0.1/32, "::1/128"]
  capacity: %d
`, name, base, demosite.ItemRules, conc, limit, 2*pages)
}

// readSeenBytes fills st's dedup memory (SeenBytes, which status reads from the last
// deep look only) with a deep look at the crawl's dedup, taken after the Redis figures
// so that its scan does not count in them.
func readSeenBytes(ctx context.Context, rdb *streams.Client, crawl string, st *inspect.Status) error {
	if st.SeenBytes > 0 || rdb.Embedded != nil {
		return nil
	}
	l, err := streams.ReadLayout(ctx, rdb, crawl)
	if err != nil {
		return err
	}
	d, err := inspect.ReadDeep(ctx, rdb, l)
	if err != nil {
		return err
	}
	st.SeenBytes = d.SeenBytes
	return nil
}

// processCPU returns this process's user+system CPU seconds.
func processCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// peakRSS returns this process's peak resident set size in bytes.
func peakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss * 1024
}

// redisInfo returns the INFO fields bench compares before and after.
func redisInfo(ctx context.Context, rdb redis.UniversalClient) map[string]float64 {
	return sumShards(shardInfo(ctx, rdb))
}

// gcCPU returns the CPU seconds the Go collector has spent in this process (background
// marking, assists and pauses; runtime/metrics' estimate).
func gcCPU() float64 {
	s := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64 {
		return 0
	}
	return s[0].Value.Float64()
}

func printBench(w io.Writer, st *inspect.Status, took time.Duration, cpu, gc float64, before, after map[string]float64, realRedis bool) {
	pages := float64(st.Stats["pages_fetched"])
	fmt.Fprintf(w, "streamcrawl bench: %d pages fetched, %d items stored, done=%v\n", int64(pages), st.ItemsStored, st.Done)
	fmt.Fprintf(w, "  wall time                     %.2f s\n", took.Seconds())
	fmt.Fprintf(w, "  pages/s                       %.0f\n", pages/took.Seconds())
	fmt.Fprintf(w, "  worker CPU s per 1000 pages   %.2f\n", cpu/pages*1000)
	fmt.Fprintf(w, "    of which GC                 %.2f\n", gc/pages*1000)
	fmt.Fprintf(w, "  worker peak RSS               %.0f MiB\n", float64(peakRSS())/(1<<20))
	if hits, misses := st.Stats["responses_handoff_hits"], st.Stats["responses_handoff_misses"]; hits+misses > 0 {
		// The responses the parse stage took from the fetch stage without decoding them.
		fmt.Fprintf(w, "  responses handed off          %d of %d parsed (%d left the hand-off unread)\n",
			hits, hits+misses, st.Stats["responses_handoff_evicted"])
	}
	if !realRedis {
		fmt.Fprintf(w, "  (embedded Redis: its CPU is in the worker figures; no Redis figures)\n")
		return
	}
	rcpu := (after["used_cpu_user"] + after["used_cpu_sys"]) - (before["used_cpu_user"] + before["used_cpu_sys"])
	cmds := after["total_commands_processed"] - before["total_commands_processed"]
	fmt.Fprintf(w, "  Redis CPU per page            %.0f µs\n", rcpu/pages*1e6)
	fmt.Fprintf(w, "  Redis commands per page       %.1f\n", cmds/pages)
	// Each read event is a wake-up of the server for a client's socket (one per round
	// trip, or per pipeline): on a VM it costs Redis more than a small command.
	fmt.Fprintf(w, "  Redis wake-ups per page       %.2f (reads processed)\n",
		(after["total_reads_processed"]-before["total_reads_processed"])/pages)
	if st.Seen > 0 {
		fmt.Fprintf(w, "  Redis bytes per seen URL      %.1f (dedup: %d bytes for %d URLs)\n",
			float64(st.SeenBytes)/float64(st.Seen), st.SeenBytes, st.Seen)
	}
	fmt.Fprintf(w, "  Redis used memory             %.1f MiB at the end, %.1f MiB peak (used_memory_peak: the server's whole life)\n",
		after["used_memory"]/(1<<20), after["used_memory_peak"]/(1<<20))
	for _, s := range st.Streams {
		if strings.HasSuffix(s.Name, ":responses") || strings.HasSuffix(s.Name, ":items") {
			fmt.Fprintf(w, "  %-29s %d entries, %.1f MiB (retention: %s)\n", s.Name, s.Length, float64(s.Bytes)/(1<<20), s.Retention)
		}
	}
}
