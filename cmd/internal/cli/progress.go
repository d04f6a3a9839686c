package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// Progress refresh intervals: on a terminal the line is redrawn in place; elsewhere a
// plain line is printed now and then.
const (
	progressTTYInterval   = 500 * time.Millisecond
	progressPlainInterval = 5 * time.Second
)

// progress shows a crawl's progress on w while a one-process crawl runs: pages, items,
// rate over the last 10 s, the queue (frontier, delayed and fetch backlog) and dead
// letters.
type progress struct {
	w     io.Writer
	term  *termWriter // on a terminal: the line is redrawn in place
	rdb   redis.UniversalClient
	l     streams.Layout
	r     rates
	start time.Time
}

// startProgress shows progress on a.Stderr until the returned stop is called; stop
// clears the line on a terminal.
func (a *App) startProgress(ctx context.Context, rdb redis.UniversalClient, l streams.Layout) (stop func()) {
	p := &progress{w: a.Stderr, term: a.term, rdb: rdb, l: l, start: time.Now()}
	every := a.progressEvery
	switch {
	case every > 0:
	case p.term != nil:
		every = progressTTYInterval
	default:
		every = progressPlainInterval
	}
	// The first sample is the crawl as this run finds it: the first line's rate is over
	// this run's work since then, not 0 for want of an earlier sample, nor the totals of
	// earlier runs.
	if stats, err := rdb.HGetAll(ctx, l.Global.Stats).Result(); err == nil {
		p.r.add(sample{at: p.start, pages: statOf(stats, "pages_fetched"), items: statOf(stats, "items_stored")})
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			p.show(ctx)
		}
	}()
	return func() {
		cancel()
		wg.Wait()
		if p.term != nil {
			p.term.Status("")
		}
	}
}

// show reads the crawl's figures and writes the line.
func (p *progress) show(ctx context.Context) {
	stats, err := p.rdb.HGetAll(ctx, p.l.Global.Stats).Result()
	if err != nil {
		return
	}
	pr, err := inspect.ReadProgress(ctx, p.rdb, p.l)
	if err != nil {
		return
	}
	n := func(k string) int64 { return statOf(stats, k) }
	now := time.Now()
	p.r.add(sample{at: now, pages: n("pages_fetched"), items: n("items_stored")})
	pages, _, _ := p.r.perSecond()
	queue := pr.Frontier + pr.Delayed
	for _, s := range pr.Stages {
		if s.Group == streams.StageFetch {
			queue += s.Pending
		}
	}
	var dead int64
	for _, k := range p.l.Parts {
		d, _ := p.rdb.XLen(ctx, k.Dead).Result()
		dead += d
	}
	line := fmt.Sprintf("%s  pages %d  items %d  %.1f pages/s  queue %d  dead letters %d",
		now.Sub(p.start).Round(time.Second), n("pages_fetched"), n("items_stored"), pages, queue, dead)
	if p.term != nil {
		p.term.Status(line)
		return
	}
	fmt.Fprintln(p.w, "progress: "+line)
}

// statOf returns counter k of a stats hash as read by HGETALL (0 when absent).
func statOf(stats map[string]string, k string) int64 {
	v, _ := strconv.ParseInt(stats[k], 10, 64)
	return v
}
