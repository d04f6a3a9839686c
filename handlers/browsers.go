package handlers

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/handlers/fetch"
	"github.com/streamcrawl/streamcrawl/handlers/fetch/browser"
	"github.com/streamcrawl/streamcrawl/handlers/metrics"
	"github.com/streamcrawl/streamcrawl/spiders"
)

// browserCloseTimeout bounds the browsers' close at the end of a run.
const browserCloseTimeout = 10 * time.Second

// browsers returns the fetch process's browser pool for pages that ask to be rendered,
// closed with the run (after the fetch stage has drained). Without a browser on PATH,
// Options.Browser or a spider that renders, there is none (nil): a page that asks to be
// rendered becomes a dead letter saying so. The pool's events are crawl counters
// (browser_launches, browser_crashes, browser_retired_*), its figures metrics.
func (r *run) browsers(ctx context.Context) (*browser.Pool, error) {
	var cfg browser.Config
	if r.cfg.Browser != nil {
		cfg = *r.cfg.Browser
	}
	sp := r.cfg.Spider
	cfg.Dial = fetch.BrowserDialer(sp.Settings)
	cfg.Logger = r.log.With(zap.String("component", "browsers"))
	cfg.OnEvent = func(event string) { r.counters.Add(event, 1) }
	pool, err := browser.New(context.WithoutCancel(ctx), cfg) // closed after the stage drains, not at once
	renders := sp.Render == spiders.RenderOn || sp.Render == spiders.RenderAuto
	if errors.Is(err, browser.ErrNoBrowser) && r.cfg.Browser == nil && !renders {
		r.log.Debug("no browser on PATH: pages asking to be rendered become dead letters")
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	r.closers = append(r.closers, func(ctx context.Context) error {
		cctx, cancel := context.WithTimeout(ctx, browserCloseTimeout)
		defer cancel()
		if err := pool.Close(cctx); err != nil {
			r.log.Warn("browsers killed: they did not close in time", zap.Error(err))
		}
		return nil // logged as what it is
	})
	r.cfg.Metrics.WatchBrowsers(func() metrics.BrowserStats {
		s := pool.Stats()
		return metrics.BrowserStats{Live: s.Live, Memory: s.Memory, Pages: s.Pages, Crashes: s.Crashes, Launches: s.Launches,
			Retired: map[string]int64{"pages": s.RetiredPages, "memory": s.RetiredMemory, "idle": s.RetiredIdle,
				"memory_kill": s.KilledMemory}}
	})
	return pool, nil
}

// extractor runs sp's callbacks on a response as the parse stage would, for render:
// auto's comparison of a page fetched both ways.
func extractor(sp *spiders.Spider) func(context.Context, *spiders.Response) (*spiders.Output, error) {
	return func(ctx context.Context, res *spiders.Response) (*spiders.Output, error) {
		cb, err := sp.Callback(res.Request.CallbackName())
		if err != nil {
			return nil, err
		}
		res.Spider = sp
		var out spiders.Output
		return &out, cb(ctx, res, &out)
	}
}
