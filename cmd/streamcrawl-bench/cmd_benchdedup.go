package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/dedup"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// benchDedupFlags are the flags of bench-dedup.
type benchDedupFlags struct {
	urls, batch, clients int
	mode                 string
	capacity             int64
	errorRate            float64
	enqueue              bool
	expireAfter          time.Duration
}

func (a *app) benchDedupCommand() *cobra.Command {
	var f benchDedupFlags
	cmd := &cobra.Command{
		Use:   "bench-dedup [--urls N] [--mode exact|bloom|set|all] [--batch N] [--redis URL]",
		Short: "Push N distinct URLs through dedup and enqueue; print URLs/s, Redis CPU and bytes per URL",
		Long: `bench-dedup measures request dedup on its own: it fingerprints N distinct URLs, pushes
them in batches through the dedup script of each mode, and prints for each mode:

  - URLs/s and Redis CPU µs per URL (INFO cpu before and after) for dedup alone, and
    for dedup + enqueue (the new URLs XADDed to a requests stream, as the frontier does);
  - Redis bytes per URL, by MEMORY USAGE of the dedup keys and by used_memory (less
    client buffers);
  - URLs dropped as false positives while inserting, and the false-positive rate
    measured on N more distinct URLs never inserted (0 for exact and set).

Modes: exact (default dedup: fingerprints bucketed into small hashes), bloom (scalable
Bloom filter), set (one Redis set, as before dedup modes: the baseline), all.

Without --redis it starts a throw-away redis-server from PATH for each mode. With
--redis it uses keys named sc:{bench-dedup-...}:* and deletes them afterwards; dedup +
enqueue holds about 200 bytes per URL in the stream until then, and other clients of
that server blur the CPU and used_memory figures.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			modes, err := benchDedupModes(f.mode)
			if err != nil {
				return err
			}
			if f.urls < 1 || f.batch < 1 || f.clients < 1 {
				return errors.New("--urls, --batch and --clients must be at least 1")
			}
			if f.capacity == 0 {
				f.capacity = int64(f.urls)
			}
			// Without --redis every mode gets a fresh throw-away server, so that nothing a
			// mode before left (freed memory, grown tables) moves the next one's figures.
			own := a.RedisURL == "" && os.Getenv("REDIS_URL") == ""
			connect := func() (*streams.Client, func(), error) {
				if !own {
					rdb, err := a.Connect(ctx, true)
					if err != nil {
						return nil, nil, err
					}
					return rdb, func() { _ = rdb.Close() }, nil
				}
				rc, url, err := startRedisChild(ctx)
				if err != nil {
					return nil, nil, fmt.Errorf("bench-dedup needs a real Redis: no --redis and no redis-server on PATH: %w", err)
				}
				a.RedisURL = url
				rdb, err := a.Connect(ctx, true)
				a.RedisURL = ""
				if err != nil {
					rc.stop()
					return nil, nil, err
				}
				return rdb, func() { _ = rdb.Close(); rc.stop() }, nil
			}
			rdb, done, err := connect()
			if err != nil {
				return err
			}
			where := "--redis"
			if own {
				where = "a throw-away redis-server per mode"
			}
			fmt.Fprintf(a.Stdout, "streamcrawl bench-dedup: %d distinct URLs, batches of %d, %d clients, capacity %d, Redis %s (%s)\n",
				f.urls, f.batch, f.clients, f.capacity, redisVersion(ctx, rdb), where)
			fmt.Fprintf(a.Stdout, "fingerprinting %d URLs and %d probes...\n", f.urls, f.urls)
			w := newBenchWork(f.urls)
			var results []dedupBenchResult
			for i, mode := range modes {
				if i > 0 && own {
					done()
					if rdb, done, err = connect(); err != nil {
						return err
					}
				}
				r, err := benchDedupMode(ctx, rdb, mode, &f, w)
				if err != nil {
					done()
					return err
				}
				printDedupResult(a.Stdout, r)
				results = append(results, r)
			}
			done()
			printDedupTable(a.Stdout, results, f.enqueue)
			return nil
		},
	}
	a.RedisFlags(cmd, false)
	cmd.Flags().IntVar(&f.urls, "urls", 1_000_000, "distinct URLs to insert (and as many probes)")
	cmd.Flags().StringVar(&f.mode, "mode", "all", "dedup mode: exact, bloom, set or all")
	cmd.Flags().IntVar(&f.batch, "batch", 1000, "fingerprints per script call")
	cmd.Flags().IntVar(&f.clients, "clients", 4, "concurrent script calls")
	cmd.Flags().Int64Var(&f.capacity, "capacity", 0, "planned URLs for exact buckets and the first Bloom filter (default --urls)")
	cmd.Flags().Float64Var(&f.errorRate, "error-rate", dedup.DefaultErrorRate, "Bloom false-positive rate")
	cmd.Flags().BoolVar(&f.enqueue, "enqueue", true, "also measure dedup + XADD of the new URLs")
	cmd.Flags().DurationVar(&f.expireAfter, "expire-after", 0, "dedup expire_after (0: URLs never expire)")
	return cmd
}

func benchDedupModes(s string) ([]dedup.Mode, error) {
	if s == "all" {
		return []dedup.Mode{dedup.Exact, dedup.Bloom, dedup.Set}, nil
	}
	switch m := dedup.Mode(strings.ToLower(strings.TrimSpace(s))); m {
	case dedup.Exact, dedup.Bloom, dedup.Set:
		return []dedup.Mode{m}, nil
	case "":
		return []dedup.Mode{dedup.Exact}, nil
	}
	return nil, fmt.Errorf("unknown dedup mode %q: want exact, bloom, set or all", s)
}

// benchWork is the input of every mode, made before any clock starts.
type benchWork struct {
	fps, probes [][]byte
	uuids       []string
	payloads    [][]byte
}

func newBenchWork(n int) *benchWork {
	w := &benchWork{fps: make([][]byte, n), probes: make([][]byte, n), uuids: make([]string, n), payloads: make([][]byte, n)}
	parallel(n, func(i int) {
		u := fmt.Sprintf("https://shop.example.com/catalog/item-%d?ref=list", i)
		fp, _ := spiders.Fingerprint("GET", u, nil)
		w.fps[i] = fp[:]
		pr, _ := spiders.Fingerprint("GET", fmt.Sprintf("https://shop.example.com/never/%d", i), nil)
		w.probes[i] = pr[:]
		w.uuids[i] = watermill.NewUUID()
		w.payloads[i], _ = spiders.MarshalRequest(&spiders.Request{URL: u, Callback: "parse_product", Meta: map[string]any{"depth": 3}})
	})
	return w
}

// parallel runs fn(0..n-1) on all CPUs.
func parallel(n int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
}

// dedupBenchResult is one mode's figures.
type dedupBenchResult struct {
	mode            dedup.Mode
	layout          string
	urls            int
	dedupRate       float64 // URLs/s
	dedupCPU        float64 // Redis µs per URL
	enqRate, enqCPU float64
	usage           dedup.Usage
	usedMemory      float64 // bytes per URL by used_memory
	dropped         int     // distinct URLs reported seen on insert
	fpRate          float64 // measured on never-inserted probes
	expectRate      float64
	expectDropped   float64
}

func benchDedupMode(ctx context.Context, rdb redis.UniversalClient, mode dedup.Mode, f *benchDedupFlags, w *benchWork) (dedupBenchResult, error) {
	r := dedupBenchResult{mode: mode, urls: f.urls}
	cfg := dedup.Config{Mode: mode, Capacity: f.capacity, ErrorRate: f.errorRate, ExpireAfter: f.expireAfter}
	if mode != dedup.Bloom {
		cfg.ErrorRate = 0
	}
	crawl := fmt.Sprintf("bench-dedup-%s-%d", mode, os.Getpid())
	cleanup := func(k streams.Keys) {
		ctx := context.WithoutCancel(ctx)
		_, _ = dedup.Delete(ctx, rdb, k)
		rdb.Del(ctx, k.Meta, k.Requests, k.Stats)
	}
	// Warm up a crawl of the same config (same scripts) so that script loading and
	// client buffers are not counted in used_memory.
	warm := streams.NewKeys(crawl + "-warm")
	cleanup(warm)
	d, err := dedup.Open(ctx, rdb, streams.NewLayout(warm.Crawl, 1), cfg, nil)
	if err != nil {
		return r, err
	}
	// Every client at once, so that the pool's connections and their buffers exist.
	nwarm := min(len(w.probes), 2*f.clients*f.batch)
	for _, fn := range []func(context.Context, [][]byte) ([]bool, error){d.Add, d.Has} {
		if _, err := runBatches(ctx, nwarm, f.batch, f.clients, func(ctx context.Context, from, to int) error {
			_, err := fn(ctx, w.probes[from:to])
			return err
		}); err != nil {
			return r, err
		}
	}
	cleanup(warm)

	keys := streams.NewKeys(crawl)
	cleanup(keys)
	defer cleanup(keys)
	waitLazyFree(ctx, rdb)
	before := redisInfo(ctx, rdb)
	if d, err = dedup.Open(ctx, rdb, streams.NewLayout(keys.Crawl, 1), cfg, nil); err != nil {
		return r, err
	}
	r.layout = d.String()
	var added atomic.Int64
	took, err := runBatches(ctx, f.urls, f.batch, f.clients, func(ctx context.Context, from, to int) error {
		got, err := d.Add(ctx, w.fps[from:to])
		for _, isNew := range got {
			if isNew {
				added.Add(1)
			}
		}
		return err
	})
	if err != nil {
		return r, err
	}
	after := redisInfo(ctx, rdb)
	r.dedupRate = float64(f.urls) / took.Seconds()
	r.dedupCPU = redisCPU(before, after) / float64(f.urls) * 1e6
	r.usedMemory = (dataMemory(after) - dataMemory(before)) / float64(f.urls)
	r.dropped = f.urls - int(added.Load())
	if r.usage, err = d.Usage(ctx); err != nil {
		return r, err
	}
	var seen atomic.Int64
	if _, err := runBatches(ctx, f.urls, f.batch, f.clients, func(ctx context.Context, from, to int) error {
		got, err := d.Has(ctx, w.probes[from:to])
		for _, s := range got {
			if s {
				seen.Add(1)
			}
		}
		return err
	}); err != nil {
		return r, err
	}
	r.fpRate = float64(seen.Load()) / float64(f.urls)
	r.expectRate, r.expectDropped = d.ExpectedFalsePositives(int64(f.urls))
	cleanup(keys)

	if f.enqueue {
		if r.enqRate, r.enqCPU, err = benchEnqueue(ctx, rdb, streams.NewKeys(crawl+"-enqueue"), cfg, f, w); err != nil {
			return r, err
		}
	}
	return r, nil
}

// benchEnqueueBody follows the dedup snippet (Deduper.Lua): it is the request
// half of the frontier's emit script, deduplicating the batch with one seen_add_all.
//
// KEYS[1] -> sc:{c}:seen
// KEYS[2] -> sc:{c}:requests
// KEYS[3] -> sc:{c}:stats
// ARGV -> for each request: fingerprint, message UUID, payload
// Output: requests queued
const benchEnqueueBody = `
local fps = {}
for i = 1, #ARGV, 3 do fps[#fps + 1] = ARGV[i] end
local isNew, new = seen_add_all(KEYS[1], fps), 0
for j = 1, #fps do
  if isNew[j] == 1 then
    local i = 3 * j - 2
    redis.call('XADD', KEYS[2], '*', '_watermill_message_uuid', ARGV[i + 1], 'metadata', '', 'payload', ARGV[i + 2])
    new = new + 1
  end
end
if new > 0 then redis.call('HINCRBY', KEYS[3], 'requests_queued', new) end
return new
`

// benchEnqueue pushes every URL through dedup + XADD and returns URLs/s and Redis µs
// per URL.
func benchEnqueue(ctx context.Context, rdb redis.UniversalClient, keys streams.Keys, cfg dedup.Config, f *benchDedupFlags, w *benchWork) (rate, cpu float64, err error) {
	cleanup := func() {
		ctx := context.WithoutCancel(ctx)
		_, _ = dedup.Delete(ctx, rdb, keys)
		rdb.Del(ctx, keys.Meta, keys.Requests, keys.Stats)
	}
	cleanup()
	defer cleanup()
	d, err := dedup.Open(ctx, rdb, streams.NewLayout(keys.Crawl, 1), cfg, nil)
	if err != nil {
		return 0, 0, err
	}
	script := redis.NewScript(d.Lua() + benchEnqueueBody)
	if err := script.Load(ctx, rdb).Err(); err != nil {
		return 0, 0, fmt.Errorf("load enqueue script: %w", err)
	}
	skeys := []string{keys.Seen, keys.Requests, keys.Stats}
	before := redisInfo(ctx, rdb)
	took, err := runBatches(ctx, f.urls, f.batch, f.clients, func(ctx context.Context, from, to int) error {
		args := make([]any, 0, 3*(to-from))
		for i := from; i < to; i++ {
			args = append(args, w.fps[i], w.uuids[i], w.payloads[i])
		}
		return script.EvalSha(ctx, rdb, skeys, args...).Err()
	})
	if err != nil {
		return 0, 0, fmt.Errorf("dedup + enqueue: %w", err)
	}
	after := redisInfo(ctx, rdb)
	return float64(f.urls) / took.Seconds(), redisCPU(before, after) / float64(f.urls) * 1e6, nil
}

// runBatches calls fn on [from, to) batches of n from clients goroutines and returns
// the wall time.
func runBatches(ctx context.Context, n, batch, clients int, fn func(ctx context.Context, from, to int) error) (time.Duration, error) {
	var next atomic.Int64
	errs := make(chan error, clients)
	start := time.Now()
	for c := 0; c < clients; c++ {
		go func() {
			for {
				from := int(next.Add(int64(batch)) - int64(batch))
				if from >= n {
					errs <- nil
					return
				}
				if err := fn(ctx, from, min(from+batch, n)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var first error
	for c := 0; c < clients; c++ {
		if err := <-errs; err != nil && first == nil {
			first = err
			next.Store(int64(n)) // stop the others
		}
	}
	return time.Since(start), first
}

// waitLazyFree waits (up to 10 s) until Redis has freed what UNLINK handed to its
// background thread, so that used_memory deltas do not count it.
func waitLazyFree(ctx context.Context, rdb redis.UniversalClient) {
	for i := 0; i < 1000; i++ {
		info, err := inspect.InfoNumbers(ctx, rdb, "memory")
		if pending, ok := info["lazyfree_pending_objects"]; err != nil || !ok || pending == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// dataMemory is used_memory without client buffers (which the server grows and
// shrinks on its own schedule).
func dataMemory(info map[string]float64) float64 {
	return info["used_memory"] - info["mem_clients_normal"]
}

func redisCPU(before, after map[string]float64) float64 {
	return (after["used_cpu_user"] + after["used_cpu_sys"]) - (before["used_cpu_user"] + before["used_cpu_sys"])
}

func redisVersion(ctx context.Context, rdb redis.UniversalClient) string {
	info, err := rdb.InfoMap(ctx, "server").Result()
	if v := info["Server"]["redis_version"]; err == nil && v != "" {
		return v
	}
	return "?"
}

func printDedupResult(w io.Writer, r dedupBenchResult) {
	fmt.Fprintf(w, "\n%s\n", r.layout)
	fmt.Fprintf(w, "  dedup            %9.0f URLs/s   Redis CPU %5.2f µs/URL\n", r.dedupRate, r.dedupCPU)
	if r.enqRate > 0 {
		fmt.Fprintf(w, "  dedup + enqueue  %9.0f URLs/s   Redis CPU %5.2f µs/URL\n", r.enqRate, r.enqCPU)
	}
	fmt.Fprintf(w, "  memory           %9.2f bytes/URL by MEMORY USAGE (%d bytes in %d keys), %.2f by used_memory\n",
		float64(r.usage.Bytes)/float64(r.urls), r.usage.Bytes, r.usage.Keys, r.usedMemory)
	fmt.Fprintf(w, "  dropped on insert %8d of %d distinct URLs (%.3f%%)", r.dropped, r.urls, 100*float64(r.dropped)/float64(r.urls))
	if r.mode == dedup.Bloom {
		fmt.Fprintf(w, ", expected %.0f", r.expectDropped)
	}
	fmt.Fprintf(w, "\n  false positives  %9.3f%% of %d never-inserted URLs", 100*r.fpRate, r.urls)
	if r.mode == dedup.Bloom {
		fmt.Fprintf(w, ", expected %.3f%%", 100*r.expectRate)
	}
	fmt.Fprintln(w)
}

// printDedupTable prints the results as a Markdown table, for the docs.
func printDedupTable(w io.Writer, rs []dedupBenchResult, enqueue bool) {
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', tabwriter.Debug)
	head := "| mode\t dedup URLs/s\t Redis µs/URL"
	if enqueue {
		head += "\t dedup+enqueue URLs/s\t Redis µs/URL"
	}
	head += "\t bytes/URL (MEMORY USAGE)\t bytes/URL (used_memory)\t dropped on insert\t false-positive rate |"
	fmt.Fprintln(tw, head)
	fmt.Fprintln(tw, "|"+strings.Repeat("---\t", strings.Count(head, "\t"))+"--- |")
	for _, r := range rs {
		row := fmt.Sprintf("| %s\t %.0f\t %.2f", r.mode, r.dedupRate, r.dedupCPU)
		if enqueue {
			row += fmt.Sprintf("\t %.0f\t %.2f", r.enqRate, r.enqCPU)
		}
		row += fmt.Sprintf("\t %.2f\t %.2f\t %d (%.3f%%)\t %.3f%% |", float64(r.usage.Bytes)/float64(r.urls), r.usedMemory,
			r.dropped, 100*float64(r.dropped)/float64(r.urls), 100*r.fpRate)
		fmt.Fprintln(tw, row)
	}
	_ = tw.Flush()
}
