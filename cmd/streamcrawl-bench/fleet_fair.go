package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/streamcrawl/streamcrawl/handlers/fleet"
)

// fleetFair runs bench fleet's fair scenario: the small crawl alone, then beside the big
// one, on the same fleet.
func (a *app) fleetFair(ctx context.Context, o *fleetOptions, dir string) error {
	sctx, stopSites := context.WithCancel(ctx)
	defer stopSites()
	big, err := serveFleetSite(sctx, o, "127.0.0.30", o.Big)
	if err != nil {
		return err
	}
	small, err := serveFleetSite(sctx, o, "127.0.0.31", o.Small)
	if err != nil {
		return err
	}
	rig, err := startFleet(ctx, o, dir)
	if err != nil {
		return err
	}
	timed := func(name string) (time.Duration, error) {
		start := time.Now()
		if err := rig.submit(ctx, name, small.spider(name, o.Small)); err != nil {
			return 0, err
		}
		err := rig.waitDone(ctx, name)
		return time.Since(start), err
	}
	alone, err := timed("small-alone")
	if err != nil {
		return errors.Join(err, rig.close())
	}
	if err := rig.submit(ctx, "big", big.spider("big", o.Big)); err != nil {
		return errors.Join(err, rig.close())
	}
	// The big crawl is under way at full speed before the small one comes.
	warm := int64(min(1000, o.Big/10))
	for p, _ := rig.counters(ctx, "big"); p < warm; p, _ = rig.counters(ctx, "big") {
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return errors.Join(err, rig.close())
		}
	}
	bigAt, _ := rig.counters(ctx, "big")
	beside, err := timed("small")
	if err != nil {
		return errors.Join(err, rig.close())
	}
	bigEnd, _ := rig.counters(ctx, "big")
	c, err := rig.reg.Get(ctx, "big")
	if err != nil {
		return errors.Join(err, rig.close())
	}
	stillRunning := c.State.Active()
	if stillRunning {
		_, err = rig.reg.Transition(ctx, "big", []fleet.State{fleet.Queued, fleet.Running}, fleet.Cancelled, "")
	}
	var ic, icAlone itemCheck
	if err == nil {
		ic, err = checkItems(rig.items("small"), small.site.ExpectedItems(small.base))
	}
	if err == nil {
		icAlone, err = checkItems(rig.items("small-alone"), small.site.ExpectedItems(small.base))
	}
	if err != nil {
		return errors.Join(err, rig.close())
	}
	w := a.Stdout
	ratio := beside.Seconds() / alone.Seconds()
	fmt.Fprintf(w, "a %d-page crawl alone, then beside a %d-page crawl (%d pages fetched when it was submitted, %d when it was done)\n\n",
		o.Small, o.Big, bigAt, bigEnd)
	fmt.Fprintf(w, "| small crawl | submit to done s | items | missing | wrong |\n")
	fmt.Fprintf(w, "| ----------- | ---------------: | ----: | ------: | ----: |\n")
	fmt.Fprintf(w, "| alone | %.2f | %d | %d | %d |\n", alone.Seconds(), icAlone.Lines, icAlone.Missing, icAlone.Wrong)
	fmt.Fprintf(w, "| beside the big one | %.2f | %d | %d | %d |\n", beside.Seconds(), ic.Lines, ic.Missing, ic.Wrong)
	fmt.Fprintf(w, "\nratio %.2f (at most %.2f); big crawl's pages/s while the small one ran: %.0f\n",
		ratio, o.MaxRatio, float64(bigEnd-bigAt)/beside.Seconds())
	failed := []error{rig.close()}
	if !stillRunning {
		failed = append(failed, fmt.Errorf("the big crawl ended (%s) before the small one: raise --big", c.State))
	}
	if ratio > o.MaxRatio {
		failed = append(failed, fmt.Errorf("the small crawl took %.2fx its time alone beside the big one, want at most %.2fx", ratio, o.MaxRatio))
	}
	if ic.Missing+ic.Wrong+icAlone.Missing+icAlone.Wrong > 0 {
		failed = append(failed, errors.New("the small crawl's items are not the site's"))
	}
	return errors.Join(failed...)
}
