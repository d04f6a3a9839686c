package handlers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
	"github.com/streamcrawl/streamcrawl/streams/loop"
)

// progressLogInterval is how often a run logs its stages' progress at INFO.
const progressLogInterval = 5 * time.Second

// unseededLogInterval is how often a run waiting for a crawl that was never seeded says
// so.
const unseededLogInterval = time.Minute

// NothingSeededFormat is the warning of a run waiting for the end of a crawl that was
// never seeded (its runtime seed key); repeated every minute until it is.
const NothingSeededFormat = "nothing seeded yet: run `streamcrawl seed SPIDER.yaml` (or LPUSH %s URL); waiting for start URLs"

// watcher logs a run's progress and, with UntilDone, ends the run once the crawl is
// done.
type watcher struct {
	cfg    runConfig
	layout streams.Layout
	outage *streams.Outage
	state  *streams.StateWatch // the crawl's epoch is checked before it is reported done
	log    *zap.Logger
	stop   context.CancelFunc // ends the run
	done   func()             // ends the run of a done crawl
	busy   busyGate           // skips reads while this process is working
}

// Run looks every PollInterval until ctx ends or the crawl is done (then it calls stop
// and returns nil). A start-URLs key that cannot be read ends a run waiting for the
// crawl to finish with that error; a service keeps serving and says so.
func (w *watcher) Run(ctx context.Context) error {
	lastLog := time.Now()
	seedErrs := loop.NewErrors(w.log, 0)
	var unseededAt time.Time // when "nothing seeded yet" was last said
	cfg := loop.Config{Log: w.log, Msg: "cannot read crawl progress; retrying"}
	return loop.Every(ctx, w.cfg.PollInterval, cfg, func(ctx context.Context) error {
		if w.busy.skip(time.Now()) {
			return nil
		}
		p, err := inspect.ReadProgress(ctx, w.cfg.Client, w.layout)
		if err != nil {
			return err
		}
		if err := p.Err(); err != nil {
			// The crawl cannot finish: a run waiting for it to end stops with the error;
			// services keep serving the rest and say so.
			if w.cfg.UntilDone {
				w.log.Error("cannot take start urls; stopping", zap.Error(err))
				w.stop()
				return loop.Stop(err)
			}
			seedErrs.Warn("cannot take start urls; the crawl cannot finish until the key is fixed", err)
		}
		if w.cfg.UntilDone && !p.Seeded && p.Seeds == 0 && time.Since(unseededAt) >= unseededLogInterval {
			// Never seeded: done cannot come until something is. Say what to do rather
			// than wait in silence.
			unseededAt = time.Now()
			w.log.Warn(fmt.Sprintf(NothingSeededFormat, w.layout.Global.Seeds))
		}
		if time.Since(lastLog) >= progressLogInterval {
			lastLog = time.Now()
			fields := []zap.Field{}
			for _, s := range p.Stages {
				fields = append(fields, zap.Int64(s.Group+"_pending", s.Pending), zap.Bool(s.Group+"_unread", s.Unread))
			}
			w.log.Info("progress", fields...)
		}
		if w.cfg.UntilDone && p.Done() && !w.outage.Active() {
			// Never "done" for a crawl whose state Redis lost: then nothing is left to do
			// because nothing is left.
			if err := w.state.Check(ctx); errors.Is(err, streams.ErrStateLost) {
				w.stop()
				return loop.Stop(err)
			} else if err != nil {
				return err
			}
			// Nor plainly "done" after a failover that may have lost writes (Crawl returns
			// ErrFailoverLoss then).
			if fo, err := streams.ReadFailover(ctx, w.cfg.Client, w.layout); err != nil {
				return err
			} else if fo != "" {
				w.log.Warn("nothing left to do, but Redis failed over during the crawl with durability async: pages may be missing",
					zap.String("failover", fo))
			} else {
				w.log.Info("crawl done: frontier empty, nothing pending or unread in any stage")
			}
			w.done()
			return loop.Stop(nil)
		}
		return nil
	})
}
