package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// fleetSites runs bench fleet's sites scenario: o.Sites crawls, one per site on
// 127.0.0.2 and up, submitted at once.
func (a *app) fleetSites(ctx context.Context, o *fleetOptions, dir string) error {
	if o.Sites < 1 || o.Sites > 200 {
		return fmt.Errorf("--sites %d: want 1..200", o.Sites)
	}
	sctx, stopSites := context.WithCancel(ctx)
	defer stopSites()
	sites := make([]*fleetSite, o.Sites)
	for i := range sites {
		s, err := serveFleetSite(sctx, o, fmt.Sprintf("127.0.0.%d", i+2), o.Pages)
		if err != nil {
			return err
		}
		sites[i] = s
	}
	rig, err := startFleet(ctx, o, dir)
	if err != nil {
		return err
	}
	name := func(i int) string { return fmt.Sprintf("site-%02d", i+1) }
	start := time.Now()
	for i, s := range sites {
		if err := rig.submit(ctx, name(i), s.spider(name(i), o.Pages)); err != nil {
			return errors.Join(err, rig.close())
		}
	}
	took := make([]time.Duration, len(sites))
	errs := make([]error, len(sites))
	var wg sync.WaitGroup
	for i := range sites {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = rig.waitDone(ctx, name(i))
			took[i] = time.Since(start)
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return errors.Join(err, rig.close())
	}
	var failed []error
	var pages, items int64
	w := a.Stdout
	fmt.Fprintf(w, "%d crawls of %d-page sites submitted at once\n\n", o.Sites, o.Pages)
	fmt.Fprintf(w, "| crawl | host | pages fetched | items | missing | wrong | duplicates | fetched twice | never fetched | done after s |\n")
	fmt.Fprintf(w, "| ----- | ---- | ------------: | ----: | ------: | ----: | ---------: | ------------: | ------------: | -----------: |\n")
	for i, s := range sites {
		p, _ := rig.counters(ctx, name(i))
		ic, err := checkItems(rig.items(name(i)), s.site.ExpectedItems(s.base))
		if err != nil {
			failed = append(failed, err)
		}
		fc := checkFetches(s.site)
		pages, items = pages+p, items+int64(ic.Lines)
		fmt.Fprintf(w, "| %s | %s | %d | %d | %d | %d | %d | %d | %d | %.1f |\n", name(i), s.ip, p, ic.Lines,
			ic.Missing, ic.Wrong, ic.Duplicates, fc.Again, fc.Missed, took[i].Seconds())
		if ic.Missing > 0 || ic.Wrong > 0 || float64(ic.Duplicates) > 0.01*float64(ic.Lines) || fc.Again > 0 || fc.Missed > 0 {
			failed = append(failed, fmt.Errorf("crawl %s: %d items missing, %d wrong, %d duplicates of %d; %d pages fetched twice, %d never %q",
				name(i), ic.Missing, ic.Wrong, ic.Duplicates, ic.Lines, fc.Again, fc.Missed, fc.Examples))
		}
	}
	fmt.Fprintf(w, "\nall %d crawls: %d pages, %d items in %.1f s: %.0f pages/s\n", o.Sites, pages, items, wall.Seconds(), float64(pages)/wall.Seconds())
	failed = append(failed, rig.close())
	return errors.Join(failed...)
}
