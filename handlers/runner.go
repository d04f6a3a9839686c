package handlers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/ThreeDotsLabs/watermill/message"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
)

// run is what the stages of one run share, and what they leave to start and to close.
type run struct {
	cfg      runConfig
	log      *zap.Logger
	layout   streams.Layout
	keys     streams.Keys
	counters *streams.Counters
	waits    *waitLog
	outage   *streams.Outage
	pub      *streams.Publisher
	router   *message.Router
	fr       *frontier.Frontier // the parse stage's, made once
	handoff  *handoff           // fetched responses for this process's parse stage; nil unless it runs both
	state    *streams.StateWatch
	reach    *streams.Reach
	forget   []func()    // what drops the process's knowledge of Redis after a failover
	guard    *stateGuard // ends the run at a key of the wrong type

	background []component                   // started beside the router, stopped before closing
	closers    []func(context.Context) error // what the stages opened, closed in reverse order
}

// runStages runs the configured stages until ctx ends (or, with UntilDone, until the
// crawl is done); Crawl runs a crawl with it. Each stage is built by its constructor
// (fetchStage, parseStage, storeStage), which adds its handlers to one Watermill router
// and its background components (the dispatcher, delayed mover, seed poller and backlog
// watch of the fetch stage; the trimmer, wait log and progress watch of every run) to
// the run.
//
// Shutdown order, bounded by the subscriber's shutdown timeout and the sink's 10 s:
//  1. stop reading: the router stops its subscribers, in-flight messages finish (up to
//     the shutdown timeout) and are acked;
//  2. the background components stop (each returns when its context ends);
//  3. one last trim, so that nothing acked past retention stays;
//  4. what the stages opened is closed in reverse order (browsers, host stats, the
//     fetch stage's frontier), then the publisher (flushing its batches), the parse
//     stage's frontier and the counters (flushing their last counts), each with
//     Close(ctx) under a context that survives ctx and bounded by its own timeout (see
//     their Close); a last write that fails is logged;
//  5. the sink is closed (flushed) last. The Redis client is the caller's.
//
// A background component that stops early with an error (the dispatcher, say) ends the
// run the same way, and runStages returns its error: a crawl never goes on without one.
func runStages(ctx context.Context, cfg runConfig) (err error) {
	if cfg.Sink != nil {
		defer closeSink(ctx, cfg.Sink, &err) // last, after everything that feeds it
	}
	r, err := newRun(ctx, cfg)
	defer func() {
		r.close(ctx)
		if gerr := r.guard.stop(); gerr != nil && err == nil {
			err = gerr // a key of the wrong type met while closing: the counters' last flush
		}
	}()
	if err != nil {
		return err
	}
	return r.serve(ctx)
}

// newRun checks cfg and builds its run: what the stages share, then each stage. The
// caller closes the run, also when newRun fails.
func newRun(ctx context.Context, cfg runConfig) (*run, error) {
	if cfg.Client == nil || cfg.Spider == nil {
		return &run{}, errors.New("handlers: run needs a redis client and a spider")
	}
	if len(cfg.Stages) == 0 {
		return &run{}, errors.New("handlers: no stage to run")
	}
	cfg.setDefaults()
	log := cfg.Logger.With(zap.String("crawl", cfg.Spider.Name), zap.String("consumer", cfg.Consumer))
	// Losing Redis is told by the reach watch in a line when it starts and one when it
	// ends; the warnings of every call that fails meanwhile go to debug.
	reach := &streams.Reach{Client: cfg.Client, Logger: log}
	r := &run{cfg: cfg, log: log.WithOptions(zap.WrapCore(reach.Quiet)), reach: reach}
	if err := r.open(ctx); err != nil {
		return r, err
	}
	r.handoff = handoffFor(cfg.Stages, cfg.HandoffBytes)
	for _, stage := range cfg.Stages {
		if err := r.addStage(ctx, stage); err != nil {
			return r, err
		}
	}
	return r, nil
}

// open reads the crawl's layout and makes what every stage shares: counters, the
// outage state, the publisher and the router.
func (r *run) open(ctx context.Context) error {
	cfg := r.cfg
	var err error
	if r.layout, err = openLayout(ctx, cfg.Client, cfg.Spider, r.log); err != nil {
		return err
	}
	if spread, err := partitionSpread(ctx, cfg.Client, r.layout); err != nil {
		r.log.Warn("cannot tell how the crawl's partitions sit on the cluster's masters", zap.Error(err))
	} else {
		logSpread(r.log, spread, len(r.layout.Parts))
	}
	r.keys = r.layout.Global
	if err := recordContinuous(ctx, cfg.Client, r.layout, cfg.Continuous); err != nil {
		return err
	}
	// A key of the wrong type ends the run (it used to be retried forever); added
	// before any stage reads or writes.
	r.guard = newStateGuard(r.layout.Crawl)
	cfg.Client.AddHook(r.guard)
	r.background = append(r.background, r.guard)
	if err := frontier.CheckSeedKey(ctx, cfg.Client, cfg.Spider.Name); err != nil {
		return err
	}
	r.waits = &waitLog{log: r.log}
	r.counters = streams.NewCounters(ctx, cfg.Client, r.keys.Stats, 0, func(field string, n int64) {
		r.waits.count(field, n)
		cfg.Metrics.Count(field, n) // a nil Metrics does nothing
	})
	// One outage state per process: a stage that finds Redis refusing writes stops every
	// stage's reading, and the crawl is not done while it lasts.
	r.outage = &streams.Outage{Logger: r.log, Counters: r.counters}
	if r.pub, err = streams.NewPublisher(cfg.Client, r.outage); err != nil {
		return err
	}
	if r.router, err = newRouter(cfg.Subscriber.ShutdownTimeout, cfg.Metrics, r.log, r.outage); err != nil {
		return err
	}
	r.state = &streams.StateWatch{Client: cfg.Client, Layout: r.layout, Outage: r.outage, Logger: r.log, OnFailover: r.failedOver}
	return nil
}

// failedOver is told by the state watch that a replica took over from a primary: the
// process forgets what it knew of Redis (the frontiers' seen caches), counts it
// (redis_failovers_seen, once per process that saw it), and, when the crawl's writes did
// not wait for replicas, records the failover in the crawl's meta hash: writes the old
// primary acknowledged and had not passed on are lost, and the crawl says so when done.
func (r *run) failedOver(ctx context.Context, what string) {
	for _, f := range r.forget {
		f()
	}
	r.counters.Add("redis_failovers_seen", 1)
	if durability(r.cfg.Spider, r.cfg.Durability).Mode == spiders.DurabilityReplicated {
		r.log.Warn("redis failed over; with durability replicated nothing acknowledged was lost", zap.String("failover", what))
		return
	}
	r.log.Error("redis failed over while the crawl's writes did not wait for replicas (durability async): writes the old "+
		"primary acknowledged and had not passed on are lost; the crawl goes on, and says so when it is done",
		zap.String("failover", what))
	if err := streams.RecordFailover(ctx, r.cfg.Client, r.layout, what); err != nil {
		r.log.Error("cannot record the failover in the crawl's meta hash", zap.Error(err))
	}
}

// serve runs the router and the background components until ctx ends or the crawl is
// done, then stops them in order (steps 1 to 3 of runStages' shutdown).
func (r *run) serve(ctx context.Context) error {
	cfg := r.cfg
	trim := r.trimmed()
	runCtx, cancelCause := context.WithCancelCause(ctx)
	cancel := func() { cancelCause(nil) }
	defer cancel()
	// A done crawl ends the run with streams.ErrNothingMore: its subscribers need not
	// wait for reads blocked on streams nothing will be added to.
	w := &watcher{cfg: cfg, layout: r.layout, outage: r.outage, state: r.state, log: r.log, stop: cancel,
		done: func() { cancelCause(streams.ErrNothingMore) }, busy: busyGate{activity: r.counters.Activity}}
	r.background = append(r.background, r.reach, r.waits, &streams.Trimmer{Client: cfg.Client, Streams: trim, Interval: cfg.TrimInterval, Logger: r.log, Meta: r.keys.Meta}, w, r.state)
	bg := &background{stop: cancel, log: r.log} // a component that stops early ends the run
	bg.start(runCtx, r.background...)
	r.log.Info("stages running", zap.Strings("stages", cfg.Stages))
	err := r.router.Run(runCtx)
	if err != nil && runCtx.Err() != nil && errors.Is(err, context.Canceled) {
		// Stopped while a subscriber was still starting (creating its group, say): the
		// same stop as any later one, not a failure (a component that failed has its
		// own error in bgErr).
		err = nil
	}
	cancel()
	bgErr := bg.wait()
	if err != nil {
		return fmt.Errorf("handlers: %w", err)
	}
	return bgErr // the trimmer trimmed once more as it stopped, after the last acks
}

// trimmed returns the streams this run trims (its stages' inputs) with their
// retention (the trimmer records it for status).
func (r *run) trimmed() map[string]spiders.StreamRetention {
	trim := map[string]spiders.StreamRetention{}
	for _, stage := range r.cfg.Stages {
		for _, k := range r.layout.Parts {
			trim[k.Input(stage)] = r.cfg.Retain[stage]
		}
	}
	return trim
}

// close closes what the run opened (step 4 of runStages' shutdown); safe on a run that
// failed half-way through opening. The closes run after ctx ended (a stop is ctx's end)
// with its values and without its cancellation; each bounds its last writes with its own
// timeout. Their errors are logged: what they could not write is lost (counts, figures)
// or was failed to the call that queued it.
func (r *run) close(ctx context.Context) {
	closers := slices.Clone(r.closers)
	slices.Reverse(closers)
	if r.pub != nil {
		closers = append(closers, r.pub.Shutdown)
	}
	if r.fr != nil {
		closers = append(closers, r.fr.Close)
	}
	if r.counters != nil {
		closers = append(closers, r.counters.Close)
	}
	for _, c := range closers {
		closeLogged(ctx, r.log, c)
	}
}

// handlerName names the router handler of a stage's (or a group's) partition i of parts.
func handlerName(stage string, i, parts int) string {
	if parts == 1 {
		return stage
	}
	return stage + "-" + strconv.Itoa(i)
}

func newStageSubscriber(cfg streams.SubscriberConfig) (*streams.Subscriber, error) {
	cfg.BatchSize = min(max(cfg.BatchSize, streams.SubscriberDefaults().BatchSize), cfg.MaxInFlight)
	return streams.NewSubscriber(cfg)
}
