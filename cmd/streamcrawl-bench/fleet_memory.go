package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// fleetMemory runs bench fleet's memory scenario: o.Crawls crawls of one site submitted
// one after another, the workers' RSS read after each.
func (a *app) fleetMemory(ctx context.Context, o *fleetOptions, dir string) error {
	if o.Crawls < 2 {
		return fmt.Errorf("--crawls %d: want 2 or more", o.Crawls)
	}
	window := min(10, o.Crawls/2) // the first and last crawls compared
	sctx, stopSites := context.WithCancel(ctx)
	defer stopSites()
	site, err := serveFleetSite(sctx, o, "127.0.0.40", o.MemoryPages)
	if err != nil {
		return err
	}
	rig, err := startFleet(ctx, o, dir)
	if err != nil {
		return err
	}
	var rss []map[string]int64 // after each crawl, by worker
	var redisUsed []float64
	var failed []error
	for i := range o.Crawls {
		name := fmt.Sprintf("mem-%03d", i+1)
		if err := rig.submit(ctx, name, site.spider(name, o.MemoryPages)); err != nil {
			return errors.Join(err, rig.close())
		}
		if err := rig.waitDone(ctx, name); err != nil {
			return errors.Join(err, rig.close())
		}
		if ic, err := checkItems(rig.items(name), site.site.ExpectedItems(site.base)); err != nil || ic.Missing+ic.Wrong > 0 {
			failed = append(failed, fmt.Errorf("crawl %s: %d items missing, %d wrong (%v)", name, ic.Missing, ic.Wrong, err))
		}
		rss = append(rss, rig.workerRSS())
		info, _ := inspect.InfoNumbers(ctx, rig.c, "memory")
		redisUsed = append(redisUsed, info["used_memory"])
	}
	mean := func(rows []map[string]int64, w string) float64 {
		var s float64
		for _, r := range rows {
			s += float64(r[w])
		}
		return s / float64(len(rows)) / (1 << 20)
	}
	w := a.Stdout
	fmt.Fprintf(w, "%d crawls of a %d-page site, one after another; RSS after each crawl, the first %d against the last %d\n\n",
		o.Crawls, o.MemoryPages, window, window)
	// The RSS after five crawls spread over the run shows a trend from a step.
	var at []int
	for q := range 5 {
		if i := q * (len(rss) - 1) / 4; len(at) == 0 || at[len(at)-1] != i {
			at = append(at, i)
		}
	}
	var after []string
	for _, i := range at {
		after = append(after, strconv.Itoa(i+1))
	}
	fmt.Fprintf(w, "| worker | mean RSS MiB, first %d | mean RSS MiB, last %d | last / first | RSS MiB after crawl %s |\n",
		window, window, strings.Join(after, ", "))
	fmt.Fprintf(w, "| ------ | ---------------------: | --------------------: | -----------: | ---: |\n")
	workers := make([]string, 0, len(rss[0]))
	for k := range rss[0] {
		workers = append(workers, k)
	}
	slices.Sort(workers)
	for _, k := range workers {
		first, last := mean(rss[:window], k), mean(rss[len(rss)-window:], k)
		var series []string
		for _, i := range at {
			series = append(series, fmt.Sprintf("%.0f", float64(rss[i][k])/(1<<20)))
		}
		fmt.Fprintf(w, "| %s | %.1f | %.1f | %.2f | %s |\n", k, first, last, last/first, strings.Join(series, ", "))
		if last > o.MaxGrowth*first {
			failed = append(failed, fmt.Errorf("worker %s: RSS %.1f MiB over the last %d crawls against %.1f over the first %d: grew more than %.2fx",
				k, last, window, first, window, o.MaxGrowth))
		}
	}
	fmt.Fprintf(w, "\nRedis used_memory after the first crawl %.1f MiB, after the last %.1f MiB (every crawl's keys are kept)\n",
		redisUsed[0]/(1<<20), redisUsed[len(redisUsed)-1]/(1<<20))
	failed = append(failed, rig.close())
	return errors.Join(failed...)
}
