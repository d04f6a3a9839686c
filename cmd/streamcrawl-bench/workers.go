package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
)

// workerCrawl is a crawl run by child processes of this binary on a real Redis, as the
// multi-process benchmarks run one: N fetch processes, one parse and one store.
type workerCrawl struct {
	c      *streams.Client
	sp     *spiders.Spider
	procs  []*exec.Cmd
	before map[string]float64            // Redis INFO when the crawl was seeded (summed over a cluster's masters)
	shards map[string]map[string]float64 // the same by master (see shards.go)
	after  map[string]map[string]float64 // by master when redisCost was read
	calls  map[string]float64            // Redis calls by command then (commandCalls)
	start  time.Time
}

// startWorkers writes spiderYAML to dir/name.yaml, deletes the crawl's keys on redisURL,
// seeds it and starts fetchers fetch processes, one parse and one store, logging to
// dir/<process><logSuffix>.log at logLevel. Close the result's client when done.
func startWorkers(ctx context.Context, redisURL, dir, name, spiderYAML string, fetchers int, logSuffix, logLevel string) (*workerCrawl, error) {
	return startWorkersWith(ctx, redisURL, dir, name, spiderYAML, fetchers, logSuffix, logLevel, workerOptions{})
}

// workerOptions are what startWorkersWith does beyond startWorkers.
type workerOptions struct {
	fetchURL string   // the fetch processes' Redis URL, a proxy's say ("": the others')
	args     []string // more flags for every process
}

// startWorkersWith is startWorkers with o.
func startWorkersWith(ctx context.Context, redisURL, dir, name, spiderYAML string, fetchers int, logSuffix, logLevel string, o workerOptions) (*workerCrawl, error) {
	spiderPath := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(spiderPath, []byte(spiderYAML), 0o644); err != nil {
		return nil, err
	}
	sp, _, err := spiders.LoadFile(spiderPath)
	if err != nil {
		return nil, err
	}
	c, err := streams.Connect(ctx, streams.ClientOptions{URL: redisURL})
	if err != nil {
		return nil, err
	}
	w := &workerCrawl{c: c, sp: sp}
	if err := w.start0(ctx, redisURL, dir, spiderPath, fetchers, logSuffix, logLevel, o); err != nil {
		w.stop()
		c.Close()
		return nil, err
	}
	return w, nil
}

func (w *workerCrawl) start0(ctx context.Context, redisURL, dir, spiderPath string, fetchers int, logSuffix, logLevel string, o workerOptions) error {
	if err := resetCrawl(ctx, w.c, w.sp.Name); err != nil {
		return err
	}
	w.shards = shardInfo(ctx, w.c)
	w.before, w.calls, w.start = sumShards(w.shards), commandCalls(ctx, w.c), time.Now()
	if _, err := handlers.Seed(ctx, w.c, w.sp, nil); err != nil {
		return err
	}
	run := func(name string, args ...string) error {
		url := redisURL
		if args[0] == "fetch" && o.fetchURL != "" {
			url = o.fetchURL
		}
		args = append(args, "--redis", url, "--spider", spiderPath, "--until-done", "--consumer", name,
			"--log-level", logLevel)
		args = append(args, o.args...)
		cmd, err := selfCommand(ctx, args...)
		if err != nil {
			return err
		}
		logf, err := os.Create(filepath.Join(dir, name+logSuffix+".log"))
		if err != nil {
			return err
		}
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			return err
		}
		w.procs = append(w.procs, cmd)
		return nil
	}
	for i := range fetchers {
		if err := run(fmt.Sprintf("fetch-%d", i+1), "fetch"); err != nil {
			return err
		}
	}
	if err := run("parse-1", "parse"); err != nil {
		return err
	}
	return run("store-1", "store", "--out", filepath.Join(dir, "items.jsonl"))
}

// stop kills the processes started so far (after a failed start).
func (w *workerCrawl) stop() {
	for _, p := range w.procs {
		p.Process.Kill() //nolint:errcheck // best effort
		p.Wait()         //nolint:errcheck // reaped
	}
}

// wait waits for every process and returns those that failed.
func (w *workerCrawl) wait() []string {
	var failed []string
	for _, p := range w.procs {
		if err := p.Wait(); err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", strings.Join(p.Args[1:2], ""), err))
		}
	}
	return failed
}

// watchRSS reads each process's peak resident set (VmHWM of /proc/<pid>/status: its own
// since exec; the rusage of a child after exit counts its parent's at fork) every
// second until the returned function is called, which returns the last reading by
// consumer name (fetch-1, parse-1, store-1), bytes. Linux only (elsewhere: none).
func (w *workerCrawl) watchRSS() func() map[string]int64 {
	var mu sync.Mutex
	peak := map[string]int64{}
	read := func() {
		for _, p := range w.procs {
			name := p.Args[1]
			for i, a := range p.Args {
				if a == "--consumer" && i+1 < len(p.Args) {
					name = p.Args[i+1]
				}
			}
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Process.Pid))
			if err != nil {
				continue
			}
			for _, l := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
					kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
					mu.Lock()
					peak[name] = max(peak[name], kb*1024)
					mu.Unlock()
				}
			}
		}
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			read()
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	return func() map[string]int64 {
		close(stop)
		<-done
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(peak)
	}
}

// commandCalls returns the calls of each Redis command so far (INFO commandstats).
func commandCalls(ctx context.Context, rdb redis.UniversalClient) map[string]float64 {
	return sumShards(eachShard(ctx, rdb, func(ctx context.Context, c redis.Cmdable) (map[string]float64, error) {
		raw, err := c.Info(ctx, "commandstats").Result()
		return parseCommandStats(raw), err
	}))
}

// callsSince returns the Redis calls by command since the crawl was seeded.
func (w *workerCrawl) callsSince(ctx context.Context) map[string]float64 {
	out := commandCalls(ctx, w.c)
	for k, v := range w.calls {
		out[k] -= v
	}
	return out
}

// redisCost returns the Redis CPU seconds and commands since the crawl was seeded.
func (w *workerCrawl) redisCost(ctx context.Context) (cpu, cmds float64) {
	w.after = shardInfo(ctx, w.c)
	after := sumShards(w.after)
	return (after["used_cpu_user"] + after["used_cpu_sys"]) - (w.before["used_cpu_user"] + w.before["used_cpu_sys"]),
		after["total_commands_processed"] - w.before["total_commands_processed"]
}
