package fleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/processors"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// run is one run of a crawl in a worker: handlers.Crawl in its own goroutine.
type run struct {
	crawl     string
	scheduled bool // the crawl has a schedule: a run that is done leaves it scheduled
	sp        *spiders.Spider
	version   int64
	share     int
	cancel    context.CancelFunc
	stopping  bool
	log       *zap.Logger
}

// stop ends the run gracefully (its in-flight work finished and acked); the worker
// learns of its end on its ended channel.
func (r *run) stop(why string) {
	if r.stopping {
		return
	}
	r.stopping = true
	r.log.Info("fleet: stopping the crawl's run", zap.String("why", why))
	r.cancel()
}

// runEnd is what a run returned.
type runEnd struct {
	run *run
	st  *inspect.Status
	err error
}

// errBadSpider is wrapped by the errors of a crawl whose spider cannot be served
// (unknown Go spider, a YAML spider that does not load, a sink a fleet refuses):
// trying again would not help, the crawl is marked failed.
var errBadSpider = errors.New("fleet: the crawl's spider cannot be served")

// start starts a run of c with its share of the worker's concurrency.
func (w *worker) start(ctx context.Context, c Crawl, share int) {
	log := w.log.With(zap.String("crawl", c.Name))
	sp, version, err := w.spider(ctx, c)
	if err == nil && slices.Contains(w.o.Stages, streams.StageStore) {
		err = w.prepareOut(sp)
	}
	if errors.Is(err, errBadSpider) {
		w.fail(ctx, c.Name, err)
		return
	}
	if err != nil {
		log.Warn("fleet: cannot start the crawl's run; trying again later", zap.Error(err))
		return
	}
	if c.State == Queued {
		// The first worker to serve it; the others find it running.
		if _, err := w.reg.Transition(ctx, c.Name, []State{Queued}, Running, ""); err != nil && !errors.Is(err, ErrState) {
			log.Warn("fleet: cannot mark the crawl running; trying again later", zap.Error(err))
			return
		}
	}
	// The registry is the one source of the crawl's spider: a new version takes the
	// crawl over from the one that started it.
	if changed, err := handlers.Adopt(ctx, w.o.Client.UniversalClient, sp); err != nil {
		log.Warn("fleet: cannot record the crawl's spider; trying again later", zap.Error(err))
		return
	} else if changed {
		log.Info("fleet: the crawl's spider is now its version", zap.Int64("version", version))
	}
	opts := w.o.Base
	// The run names its crawl in its log itself.
	opts.Client, opts.Stages, opts.Consumer, opts.Logger = w.o.Client, w.o.Stages, w.o.Consumer, w.log
	// A continuous crawl is never done: its run serves until stopped. Seeding again is
	// harmless (the start URLs are seen), and spares a worker to wait for another's.
	mode := c.Mode()
	opts.Serve, opts.NoSeed = mode.On, false
	if mode.On {
		// The crawl's mode as submitted; an idle window lets it count as done between
		// revisits (inspect.Continuous.IdleWindow), which a fleet shows but does not
		// act on: the run serves on.
		opts.Continuous = &mode
	}
	opts.Out = w.out(sp)
	opts.FetchConcurrency, opts.ParseConcurrency, opts.StoreConcurrency = share, share, share
	opts.SharedHosts = w.sharedHost
	rctx, cancel := context.WithCancel(ctx)
	r := &run{crawl: c.Name, scheduled: c.Schedule != "", sp: sp, version: version, share: share, cancel: cancel, log: log}
	w.runs[c.Name] = r
	w.shareHosts()
	fields := []zap.Field{zap.Int64("version", version), zap.Int("share", share)}
	if slices.Contains(w.o.Stages, streams.StageStore) {
		fields = append(fields, zap.String("out", processors.RedactedOut(opts.Out)))
	}
	log.Info("fleet: serving the crawl", fields...)
	go func() {
		defer cancel()
		st, err := handlers.Crawl(rctx, sp, opts)
		w.ended <- runEnd{run: r, st: st, err: err}
	}()
}

// end handles the end of a run: a stopped run is forgotten; a crawl done moves to done,
// one that ended in an error to failed; other errors are tried again, a few times.
func (w *worker) end(ctx context.Context, e runEnd) {
	r := e.run
	delete(w.runs, r.crawl)
	w.shareHosts()
	if r.stopping || ctx.Err() != nil {
		r.log.Info("fleet: the crawl's run stopped")
		return
	}
	switch {
	case e.err == nil && e.st != nil && e.st.Done:
		delete(w.errs, r.crawl)
		to := Done
		if r.scheduled {
			to = Scheduled // until its next tick
		}
		if _, err := w.reg.Transition(ctx, r.crawl, []State{Queued, Running}, to, ""); err == nil {
			r.log.Info("fleet: the crawl is done", zap.String("state", string(to)))
		} else if !errors.Is(err, ErrState) && !errors.Is(err, ErrUnknownCrawl) {
			r.log.Warn("fleet: cannot mark the crawl done", zap.Error(err))
		}
	case e.err != nil && e.st != nil && e.st.Done:
		// Ended, badly: no page fetched, or writes lost in a failover.
		delete(w.errs, r.crawl)
		w.fail(ctx, r.crawl, e.err)
	default:
		err := e.err
		if err == nil {
			err = errors.New("fleet: the run ended before the crawl was done")
		}
		re := w.errs[r.crawl]
		if re.version != r.version {
			re = runErrors{version: r.version}
		}
		re.n++
		if re.n >= maxRunErrors {
			delete(w.errs, r.crawl)
			w.fail(ctx, r.crawl, fmt.Errorf("%d runs in a row ended in an error, the last: %w", re.n, err))
			return
		}
		re.retryAt = time.Now().Add(time.Duration(re.n) * 2 * time.Second)
		w.errs[r.crawl] = re
		r.log.Warn("fleet: the crawl's run ended in an error; trying again", zap.Error(err), zap.Int("runs_failed", re.n))
	}
}

// fail marks crawl failed with err, unless it has left the active states meanwhile.
func (w *worker) fail(ctx context.Context, crawl string, err error) {
	w.log.Error("fleet: the crawl failed", zap.String("crawl", crawl), zap.Error(err))
	if _, terr := w.reg.Transition(ctx, crawl, []State{Queued, Running}, Failed, err.Error()); terr != nil &&
		!errors.Is(terr, ErrState) && !errors.Is(terr, ErrUnknownCrawl) {
		w.log.Warn("fleet: cannot mark the crawl failed", zap.String("crawl", crawl), zap.Error(terr))
	}
}

// spider returns c's spider and its version: the YAML text the registry holds, or the
// Go spider registered (handlers.Register) under c.GoSpider, named as the crawl.
func (w *worker) spider(ctx context.Context, c Crawl) (*spiders.Spider, int64, error) {
	if c.GoSpider != "" {
		sp, err := handlers.RegisteredSpider(c.GoSpider)
		if err != nil {
			return nil, 0, fmt.Errorf("%w: %w", errBadSpider, err)
		}
		sp.Name = c.Name
		return sp, c.Version, nil
	}
	text, version, err := w.reg.Spider(ctx, c.Name)
	if err != nil {
		return nil, 0, err
	}
	sp, _, err := spiders.Parse(c.Name+".yaml", text)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", errBadSpider, err)
	}
	if sp.Name != c.Name {
		return nil, 0, fmt.Errorf("%w: the spider is named %q, the crawl %q", errBadSpider, sp.Name, c.Name)
	}
	return sp, version, nil
}

// out is where the store stage writes sp's items: its sink, else the worker's template.
func (w *worker) out(sp *spiders.Spider) string {
	if sp.Sink != "" {
		return sp.Sink
	}
	return strings.ReplaceAll(w.o.Out, "{crawl}", sp.Name)
}

// prepareOut checks where sp's items go and makes a file's directory. A submitted
// spider is data from whoever can submit: its sink, when a file, must be a relative
// path that stays under the worker's directory.
func (w *worker) prepareOut(sp *spiders.Spider) error {
	out := w.out(sp)
	if !isFile(out) {
		return nil
	}
	if sp.Sink != "" && (filepath.IsAbs(out) || !filepath.IsLocal(out)) {
		return fmt.Errorf("%w: sink %q: a fleet worker writes files only under its directory (a relative path, no ..)", errBadSpider, out)
	}
	if dir := filepath.Dir(out); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("fleet: the directory of %s: %w", out, err)
		}
	}
	return nil
}

// isFile reports whether out names a file (not a postgres:// URL, not the stream only).
func isFile(out string) bool {
	lower := strings.ToLower(out)
	return out != processors.StreamOnly && !strings.HasPrefix(lower, "postgres://") && !strings.HasPrefix(lower, "postgresql://")
}
