package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/spiders/demosite"
	"github.com/streamcrawl/streamcrawl/streams"
)

// chaosOptions configure a chaos run.
type chaosOptions struct {
	Pages         int
	Procs         int           // worker processes per stage
	KillEvery     time.Duration // one random worker is killed this often
	MaxKills      int           // stop killing after this many (0: until done)
	RestartAfter  time.Duration // a killed worker is restarted after this
	MinIdle       time.Duration
	ClaimInterval time.Duration
	RetryBackoff  time.Duration
	Timeout       time.Duration // the whole run
	Latency       time.Duration // the site answers after this (a crawl slow enough to kill into)
	Concurrency   int           // the spider's settings.concurrency
	RedisURL      string
	Dir           string    // work dir: spider, item files, worker logs
	Log           io.Writer // progress lines; nil: none
}

// worker is one worker process slot of a chaos run.
type worker struct {
	stage, slot string
	gen         int
	cmd         *exec.Cmd
	exited      chan struct{}
	exitErr     error
}

func (w *worker) consumer() string { return fmt.Sprintf("%s-g%d", w.slot, w.gen) }

// chaosRun is the state of one chaos run.
type chaosRun struct {
	opt    chaosOptions
	spider string
	rdb    redis.UniversalClient
	keys   streams.Keys
	mu     sync.Mutex
	procs  []*worker
	begin  time.Time
	report chaosReport
}

// runChaos crawls the demo shop with opt.Procs worker processes per stage on a real
// Redis, SIGKILLs a random worker every KillEvery and restarts it under a new consumer
// name (so its entries must be taken over by XAUTOCLAIM), and checks the outcome
// against the site's ground truth.
func runChaos(ctx context.Context, opt chaosOptions) (*chaosReport, error) {
	if opt.Log == nil {
		opt.Log = io.Discard
	}
	if _, err := selfCommand(ctx); err != nil { // a child of a bench run starts no workers
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, opt.Timeout)
	defer cancel()

	site := demosite.New(opt.Pages)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	slow := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		time.Sleep(opt.Latency)
		site.ServeHTTP(w, req)
	})
	srv := &http.Server{Handler: slow, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	base := "http://" + ln.Addr().String() + "/"

	spiderPath := filepath.Join(opt.Dir, "chaos.yaml")
	yaml := strings.Replace(site.SpiderYAML("chaos", base), "concurrency: 32", "concurrency: "+strconv.Itoa(opt.Concurrency), 1)
	if err := os.WriteFile(spiderPath, []byte(yaml), 0o644); err != nil {
		return nil, err
	}
	sp, c, err := freshCrawl(ctx, opt.RedisURL, spiderPath, []byte(yaml))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	r := &chaosRun{opt: opt, spider: spiderPath, rdb: c, keys: streams.NewKeys(sp.Name)}
	if _, err := handlers.Seed(ctx, c, sp, nil); err != nil {
		return nil, err
	}
	start := time.Now()
	r.begin = start
	for _, stage := range []string{streams.StageFetch, streams.StageParse, streams.StageStore} {
		for i := 1; i <= opt.Procs; i++ {
			w := &worker{stage: stage, slot: fmt.Sprintf("%s-%d", stage, i), gen: 1}
			if err := r.start(w); err != nil {
				r.killAll()
				return nil, err
			}
		}
	}
	err = r.chaosLoop(ctx)
	r.report.Took = time.Since(start)
	r.killAll()
	if err != nil {
		return &r.report, err
	}
	if err := r.check(ctx, site, base); err != nil {
		return &r.report, err
	}
	return &r.report, nil
}

// start launches w's process.
func (r *chaosRun) start(w *worker) error {
	args := []string{w.stage, "--redis", r.opt.RedisURL, "--spider", r.spider, "--until-done",
		"--consumer", w.consumer(), "--min-idle", r.opt.MinIdle.String(),
		"--claim-interval", r.opt.ClaimInterval.String(), "--retry-backoff", r.opt.RetryBackoff.String(),
		"--log-format", "json", "--log-level", "info"}
	if w.stage == streams.StageStore {
		// Each store slot keeps its own file, re-opened by its restarts.
		args = append(args, "--out", filepath.Join(r.opt.Dir, w.slot+".jsonl"))
	}
	cmd, err := selfCommand(context.Background(), args...) // stopped by kill, not by a context
	if err != nil {
		return err
	}
	logf, err := os.OpenFile(filepath.Join(r.opt.Dir, w.slot+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start %s: %w", w.consumer(), err)
	}
	w.cmd, w.exited = cmd, make(chan struct{})
	go func() {
		w.exitErr = cmd.Wait()
		logf.Close()
		close(w.exited)
	}()
	r.mu.Lock()
	r.procs = append(r.procs, w)
	r.mu.Unlock()
	return nil
}

// chaosLoop kills and restarts workers until every process has exited by itself (the
// crawl is done) or ctx ends.
func (r *chaosRun) chaosLoop(ctx context.Context) error {
	kill := time.NewTicker(r.opt.KillEvery)
	defer kill.Stop()
	poll := time.NewTicker(100 * time.Millisecond)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("chaos: crawl not done within %s", r.opt.Timeout)
		case <-poll.C:
			if r.allExited() {
				return r.exitErrors()
			}
		case <-kill.C:
			if r.opt.MaxKills > 0 && r.report.Kills >= r.opt.MaxKills {
				continue
			}
			if err := r.killOne(ctx); err != nil {
				return err
			}
		}
	}
}

// killOne SIGKILLs a random running worker, restarts it under a new consumer name after
// RestartAfter, and measures how long its pending entries take to be redelivered.
func (r *chaosRun) killOne(ctx context.Context) error {
	var running []*worker
	r.mu.Lock()
	for _, w := range r.procs {
		select {
		case <-w.exited:
		default:
			running = append(running, w)
		}
	}
	r.mu.Unlock()
	if len(running) == 0 {
		return nil
	}
	w := running[rand.N(len(running))]
	_ = w.cmd.Process.Signal(syscall.SIGKILL)
	<-w.exited
	killedAt := time.Now()
	r.report.Kills++
	stream := r.keys.Input(w.stage)
	held := pendingOf(ctx, r.rdb, stream, w.stage, w.consumer())
	fmt.Fprintf(r.opt.Log, "%6.1fs kill -9 %s (held %d entries)\n", time.Since(r.begin).Seconds(), w.consumer(), held)
	if held > 0 {
		go r.timeRedelivery(ctx, stream, w.stage, w.consumer(), killedAt)
	}
	time.Sleep(r.opt.RestartAfter)
	next := &worker{stage: w.stage, slot: w.slot, gen: w.gen + 1}
	if err := r.start(next); err != nil {
		return err
	}
	r.report.Restarts++
	return nil
}

// timeRedelivery waits until consumer holds no pending entries (they were claimed by
// others) and records the time since the kill.
func (r *chaosRun) timeRedelivery(ctx context.Context, stream, group, consumer string, killedAt time.Time) {
	for ctx.Err() == nil {
		if pendingOf(ctx, r.rdb, stream, group, consumer) == 0 {
			r.mu.Lock()
			r.report.Redelivery = append(r.report.Redelivery, time.Since(killedAt))
			r.mu.Unlock()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func pendingOf(ctx context.Context, rdb redis.UniversalClient, stream, group, consumer string) int64 {
	p, err := rdb.XPending(ctx, stream, group).Result()
	if err != nil {
		return 0
	}
	return p.Consumers[consumer]
}

func (r *chaosRun) allExited() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, w := range r.procs {
		select {
		case <-w.exited:
		default:
			return false
		}
	}
	return true
}

// exitErrors reports workers that exited by themselves with an error (killed ones are
// expected to have died).
func (r *chaosRun) exitErrors() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	latest := map[string]*worker{}
	for _, w := range r.procs {
		if cur := latest[w.slot]; cur == nil || w.gen > cur.gen {
			latest[w.slot] = w
		}
	}
	var bad []string
	for _, w := range latest {
		if w.exitErr != nil {
			bad = append(bad, fmt.Sprintf("%s: %v (log %s)", w.consumer(), w.exitErr, filepath.Join(r.opt.Dir, w.slot+".log")))
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		return fmt.Errorf("chaos: workers failed: %v", bad)
	}
	return nil
}

func (r *chaosRun) killAll() {
	r.mu.Lock()
	procs := append([]*worker(nil), r.procs...)
	r.mu.Unlock()
	for _, w := range procs {
		select {
		case <-w.exited:
		default:
			_ = w.cmd.Process.Signal(syscall.SIGKILL)
			<-w.exited
		}
	}
}

// slotFiles returns the store slots' item files.
func (r *chaosRun) slotFiles() []string {
	var files []string
	for i := 1; i <= r.opt.Procs; i++ {
		files = append(files, filepath.Join(r.opt.Dir, "store-"+strconv.Itoa(i)+".jsonl"))
	}
	return files
}
