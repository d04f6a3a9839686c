package fleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
)

// Defaults of WorkerOptions.
const (
	// DefaultConcurrency is a worker's concurrency shared by its crawls.
	DefaultConcurrency = 64
	// DefaultOut is where a worker's store stage writes a crawl's items when neither
	// its spider's sink nor WorkerOptions.Out says.
	DefaultOut = "items/{crawl}.jsonl"
	// DefaultPollInterval is how often a worker reads the registry's generation.
	DefaultPollInterval = 500 * time.Millisecond
	// DefaultListInterval is how often a worker reads the whole registry even when the
	// generation did not move (a change it missed, a failed read).
	DefaultListInterval = 10 * time.Second
)

// maxRunErrors is how many runs of one version of a crawl may end in an error, one
// after another, before the worker marks the crawl failed instead of trying again.
const maxRunErrors = 3

// WorkerOptions configure Serve.
type WorkerOptions struct {
	// Client is the open Redis client of the registry and of every crawl; Serve does
	// not close it. Required.
	Client *streams.Client
	// Stages are the stages this worker runs for every crawl. Default all three.
	Stages []string
	// Consumer names the worker in every crawl's stage groups (one run per crawl at a
	// time in a process, so one name serves them all). Default host-pid.
	Consumer string
	// Out is where the store stage writes a crawl's items when its spider has no sink:
	// a template in which "{crawl}" is replaced by the crawl's name (processors.Open
	// takes the result). Default DefaultOut.
	Out string
	// Concurrency is the worker's requests in flight, shared by the active crawls in
	// proportion to their weights (see share). Default DefaultConcurrency.
	Concurrency int
	// Base holds the other settings of every run (subscriber, retention, backlog,
	// durability, browsers, metrics); Serve sets Client, Stages, Consumer, Out, Serve,
	// NoSeed, Logger and the concurrencies of each run's copy.
	Base handlers.Options
	// Logger gets the worker's log, each run's with a "crawl" field. Nil: none.
	Logger *zap.Logger
	// PollInterval is how often the registry's generation is read. Default
	// DefaultPollInterval.
	PollInterval time.Duration
	// ListInterval is how often the registry is read whole anyway. Default
	// DefaultListInterval.
	ListInterval time.Duration
}

func (o *WorkerOptions) setDefaults() error {
	if o.Client == nil {
		return errors.New("fleet: worker needs a Redis client")
	}
	if len(o.Stages) == 0 {
		o.Stages = handlers.AllStages
	}
	for _, s := range o.Stages {
		if !slices.Contains(handlers.AllStages, s) {
			return fmt.Errorf("fleet: unknown stage %q (want fetch, parse or store)", s)
		}
	}
	if o.Consumer == "" {
		host, _ := os.Hostname()
		o.Consumer = host + "-" + strconv.Itoa(os.Getpid())
	}
	if o.Out == "" {
		o.Out = DefaultOut
	}
	if isFile(o.Out) && !strings.Contains(o.Out, "{crawl}") {
		return fmt.Errorf("fleet: out %q: a file template needs {crawl}, or the crawls would share one file", o.Out)
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.ListInterval <= 0 {
		o.ListInterval = DefaultListInterval
	}
	return nil
}

// Serve runs the worker until ctx ends: it serves every active crawl of the registry
// (queued or running) with the stages o names, one run of handlers.Crawl per crawl,
// and keeps that set in step with the registry.
//
// It reads the registry's generation every PollInterval, and the crawls when it moved
// (or every ListInterval anyway). A crawl it does not serve yet gets a run; the first
// worker to serve a queued crawl makes it running. A run whose crawl is no longer
// active (paused, cancelled, deleting, ended, removed), whose crawl has a new version,
// or whose share of the concurrency moved by 2x or more is stopped gracefully (its
// in-flight work finished and acked); once it has ended, a crawl still active gets a
// new run: one crawl never has two runs in one process, which would share the consumer
// name. A run that ends because its crawl is done moves the crawl to done (failed,
// with the error, when the crawl ended without a page, or lost writes in a failover);
// other errors are tried again, maxRunErrors times in a row for one version, before the
// crawl is marked failed.
//
// When ctx ends, every run is stopped gracefully and Serve returns nil once they have
// ended. Nothing of a crawl is kept once it is no longer active.
func Serve(ctx context.Context, o WorkerOptions) error {
	if err := o.setDefaults(); err != nil {
		return err
	}
	w := &worker{o: o, reg: New(o.Client.UniversalClient), log: o.Logger,
		runs: map[string]*run{}, ended: make(chan runEnd), errs: map[string]runErrors{}}
	return w.serve(ctx)
}

// worker is Serve's state, owned by its one goroutine.
type worker struct {
	o     WorkerOptions
	reg   *Registry
	log   *zap.Logger
	runs  map[string]*run      // by crawl name: the run serving it, until it has ended
	ended chan runEnd          // runs report their end here
	errs  map[string]runErrors // by crawl name: runs that ended in an error, of active crawls only

	// listed is the registry as last read, for the schedules' ticks between reads.
	listed []Crawl

	// shared says which hosts two of the crawls served reach (SharedHosts), for every
	// run's fetch stage: rebuilt as runs start and end.
	shared atomic.Pointer[func(host string) bool]
}

// shareHosts rebuilds w.shared from the spiders of the runs.
func (w *worker) shareHosts() {
	sps := make([]*spiders.Spider, 0, len(w.runs))
	for _, r := range w.runs {
		sps = append(sps, r.sp)
	}
	f := SharedHosts(sps)
	w.shared.Store(&f)
}

// sharedHost reports whether host is one that two crawls served reach: their requests
// there pass the host's fleet-wide gate (handlers.Options.SharedHosts).
func (w *worker) sharedHost(host string) bool {
	f := w.shared.Load()
	return f != nil && (*f)(host)
}

// runErrors counts the runs of one version of a crawl that ended in an error in a row,
// and says when the next may start.
type runErrors struct {
	version int64
	n       int
	retryAt time.Time
}

func (w *worker) serve(ctx context.Context) error {
	w.log.Info("fleet worker serving", zap.Strings("stages", w.o.Stages), zap.String("consumer", w.o.Consumer),
		zap.Int("concurrency", w.o.Concurrency))
	poll := time.NewTicker(w.o.PollInterval)
	defer poll.Stop()
	var gen int64 = -1
	var listed, warned time.Time
	reread := true
	for {
		if reread || time.Since(listed) >= w.o.ListInterval {
			if crawls, err := w.reg.List(ctx); err != nil {
				// Tried again at every poll; said once in a while (an outage).
				if ctx.Err() == nil && time.Since(warned) >= w.o.ListInterval {
					w.log.Warn("fleet: read the registry; trying again", zap.Error(err))
					warned = time.Now()
				}
			} else {
				listed, reread = time.Now(), false
				w.listed = crawls
				w.reconcile(ctx, crawls)
				w.schedule(ctx, crawls)
			}
		}
		select {
		case <-ctx.Done():
			return w.stopAll()
		case e := <-w.ended:
			w.end(ctx, e)
			reread = true // a stopped run's crawl may want a new one at once
		case <-poll.C:
			g, err := w.reg.Gen(ctx)
			if err != nil {
				continue
			}
			if g != gen {
				gen, reread = g, true
			} else {
				// A tick moves no generation: the crawls as last read are as Redis has
				// them (a stale list would count ticks from an old change).
				w.schedule(ctx, w.listed)
			}
		}
	}
}

// stopAll stops every run and waits for them to end.
func (w *worker) stopAll() error {
	for _, r := range w.runs {
		r.stop("the worker stops")
	}
	for len(w.runs) > 0 {
		e := <-w.ended
		delete(w.runs, e.run.crawl)
	}
	w.log.Info("fleet worker stopped")
	return nil
}

// reconcile stops the runs the registry no longer wants as they are and starts those
// of active crawls without one.
func (w *worker) reconcile(ctx context.Context, crawls []Crawl) {
	active := make(map[string]Crawl, len(crawls))
	for _, c := range crawls {
		if c.State.Active() {
			active[c.Name] = c
		}
	}
	shares := shares(active, w.o.Concurrency)
	for name, r := range w.runs {
		c, ok := active[name]
		switch {
		case !ok:
			r.stop("the crawl is no longer active")
		case c.Version != r.version:
			r.stop(fmt.Sprintf("version %d submitted", c.Version))
		case moved(r.share, shares[name]):
			r.stop(fmt.Sprintf("its share moves from %d to %d", r.share, shares[name]))
		}
	}
	for name := range w.errs {
		if _, ok := active[name]; !ok {
			delete(w.errs, name) // nothing kept of a crawl no longer active
		}
	}
	for _, name := range sortedKeys(active) {
		c := active[name]
		if _, serving := w.runs[name]; serving || ctx.Err() != nil {
			continue
		}
		if e, ok := w.errs[name]; ok && e.version == c.Version && time.Now().Before(e.retryAt) {
			continue
		}
		w.start(ctx, c, shares[name])
	}
}

// sortedKeys returns m's keys in order, so that crawls start in a stable order.
func sortedKeys(m map[string]Crawl) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
