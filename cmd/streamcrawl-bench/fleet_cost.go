package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
)

// redisCost is what one crawl cost its redis-server, whole (the server is the run's own).
type redisCost struct {
	Pages      int64 // the crawl's pages_fetched counter when it was done
	PagesLater int64 // and 2 s later (fleet runs)
	Served     int   // pages of the site served (its own count), robots.txt aside
	Fetches    fetchCheck
	Commands   float64 // total_commands_processed: those clients sent and those scripts called
	Scripts    float64 // calls of EVALSHA, EVAL and FCALL (INFO commandstats)
	Reads      float64 // total_reads_processed: the server's wake-ups for a client's socket
	CPU        float64 // used_cpu_user + used_cpu_sys, seconds
	Wall       time.Duration
}

// costSince returns the cost on rdb since before and calls (redisInfo, commandCalls).
func costSince(ctx context.Context, rdb redis.UniversalClient, before, calls map[string]float64) redisCost {
	after, callsAfter := redisInfo(ctx, rdb), commandCalls(ctx, rdb)
	var c redisCost
	c.Commands = after["total_commands_processed"] - before["total_commands_processed"]
	c.CPU = (after["used_cpu_user"] + after["used_cpu_sys"]) - (before["used_cpu_user"] + before["used_cpu_sys"])
	c.Reads = after["total_reads_processed"] - before["total_reads_processed"]
	for _, k := range []string{"evalsha", "eval", "fcall", "evalsha_ro", "eval_ro", "fcall_ro"} {
		c.Scripts += callsAfter[k] - calls[k]
	}
	return c
}

// fleetCost runs bench fleet's cost scenario: one crawl through the fleet, then the same
// site crawled by one `crawl --redis` process, each on a redis-server of its own.
func (a *app) fleetCost(ctx context.Context, o *fleetOptions, dir string) error {
	sctx, stopSites := context.WithCancel(ctx)
	defer stopSites()
	site, err := serveFleetSite(sctx, o, "127.0.0.50", o.CostPages)
	if err != nil {
		return err
	}
	const name = "cost"
	yaml := site.spider(name, o.CostPages)
	// The site's own counts of each run, beside the crawl's counter.
	served := func(c *redisCost) {
		c.Fetches = checkFetches(site.site)
		c.Served = int(site.site.TotalRequests()) - site.site.Requests()["/robots.txt"]
		site.site.Reset()
	}
	fl, err := fleetCostRun(ctx, o, dir+"/fleet", name, yaml)
	if err != nil {
		return err
	}
	served(&fl)
	one := *o
	one.FetchParse, one.Store, one.AllStages = 0, 0, 1
	single, err := fleetCostRun(ctx, &one, dir+"/single", name, yaml)
	if err != nil {
		return err
	}
	served(&single)
	alone, err := crawlAloneCost(ctx, dir, name, yaml)
	if err != nil {
		return err
	}
	served(&alone)
	w := a.Stdout
	fmt.Fprintf(w, "one crawl of a %d-page site through the fleet, then by one crawl --redis process (a fresh redis-server each);\n"+
		"per page is per request the site served (the crawl's pages_fetched counter, read when the crawl is done, is beside it)\n\n", o.CostPages)
	fmt.Fprintf(w, "| run | pages_fetched at done / 2 s later | requests served | fetched twice | never fetched | commands / page (incl. in scripts) | script calls / page | wake-ups / page | Redis CPU µs / page | wall s |\n")
	fmt.Fprintf(w, "| --- | ----: | ----: | ----: | ----: | ---------------------------------: | ------------------: | --------------: | ------------------: | -----: |\n")
	row := func(what string, c redisCost) {
		p := float64(c.Served)
		fmt.Fprintf(w, "| %s | %d / %d | %d | %d | %d | %.2f | %.2f | %.2f | %.1f | %.1f |\n", what, c.Pages, c.PagesLater, c.Served, c.Fetches.Again, c.Fetches.Missed,
			c.Commands/p, c.Scripts/p, c.Reads/p, c.CPU/p*1e6, c.Wall.Seconds())
	}
	row(fmt.Sprintf("fleet (%d fetch,parse + %d store + %d all-stage workers)", o.FetchParse, o.Store, o.AllStages), fl)
	row("fleet (one worker, every stage)", single)
	row("crawl --redis alone", alone)
	ratio := func(a, b redisCost, f func(redisCost) float64) float64 {
		return (f(a) / float64(a.Served)) / (f(b) / float64(b.Served))
	}
	commands := func(c redisCost) float64 { return c.Commands }
	redisCPU := func(c redisCost) float64 { return c.CPU }
	reads := func(c redisCost) float64 { return c.Reads }
	// The check is like for like: one process doing every stage either way. The fleet's
	// split over processes costs what the same split costs a crawl without the fleet.
	cmds, cpu := ratio(single, alone, commands), ratio(single, alone, redisCPU)
	fmt.Fprintf(w, "\none worker / crawl alone: commands %.2f, Redis CPU %.2f (at most %.2f each), wake-ups %.2f\n",
		cmds, cpu, o.MaxCostRatio, ratio(single, alone, reads))
	fmt.Fprintf(w, "the fleet's workers / crawl alone: commands %.2f, Redis CPU %.2f, wake-ups %.2f\n",
		ratio(fl, alone, commands), ratio(fl, alone, redisCPU), ratio(fl, alone, reads))
	var failed []error
	for _, c := range []redisCost{fl, single, alone} {
		if c.Fetches.Again+c.Fetches.Missed > 0 || c.Served < o.CostPages/2 {
			failed = append(failed, fmt.Errorf("requests served %d, %d pages fetched twice, %d never: want each page once", c.Served, c.Fetches.Again, c.Fetches.Missed))
		}
	}
	if cmds > o.MaxCostRatio || cpu > o.MaxCostRatio {
		failed = append(failed, fmt.Errorf("one worker's Redis cost per page is over %.2fx crawl --redis's", o.MaxCostRatio))
	}
	return errors.Join(failed...)
}

// fleetCostRun runs one crawl through a fleet of its own (o's workers, a redis-server
// of its own, logs and items in dir) and returns what it cost that server.
func fleetCostRun(ctx context.Context, o *fleetOptions, dir, name, yaml string) (redisCost, error) {
	var c redisCost
	if err := os.Mkdir(dir, 0o755); err != nil {
		return c, err
	}
	rig, err := startFleet(ctx, o, dir)
	if err != nil {
		return c, err
	}
	before, calls, start := redisInfo(ctx, rig.c), commandCalls(ctx, rig.c), time.Now()
	if err := rig.submit(ctx, name, yaml); err != nil {
		return c, errors.Join(err, rig.close())
	}
	if err := rig.waitDone(ctx, name); err != nil {
		return c, errors.Join(err, rig.close())
	}
	c = costSince(ctx, rig.c, before, calls)
	c.Wall = time.Since(start)
	c.Pages, _ = rig.counters(ctx, name)
	// Read again a little later: a worker may count pages after another marked the crawl done.
	if err := sleepCtx(ctx, 2*time.Second); err != nil {
		return c, errors.Join(err, rig.close())
	}
	c.PagesLater, _ = rig.counters(ctx, name)
	return c, rig.close()
}

// crawlAloneCost crawls with one `crawl --redis` process on a redis-server of its own
// and returns what it cost that server.
func crawlAloneCost(ctx context.Context, dir, name, yaml string) (redisCost, error) {
	var c redisCost
	rc, url, err := startRedisChild(ctx)
	if err != nil {
		return c, err
	}
	defer rc.stop()
	rdb, err := streams.Connect(ctx, streams.ClientOptions{URL: url})
	if err != nil {
		return c, err
	}
	defer rdb.Close()
	spider := filepath.Join(dir, name+"-alone.yaml")
	if err := os.WriteFile(spider, []byte(yaml), 0o644); err != nil {
		return c, err
	}
	cmd, err := selfCommand(ctx, "crawl", "--redis", url, "--spider", spider, "--out", filepath.Join(dir, name+"-alone.jsonl"),
		"--log-level", "error", "--retry-backoff", "100ms")
	if err != nil {
		return c, err
	}
	logPath := filepath.Join(dir, "crawl-alone.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return c, err
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	before, calls, start := redisInfo(ctx, rdb), commandCalls(ctx, rdb), time.Now()
	if err := cmd.Run(); err != nil {
		return c, fmt.Errorf("crawl --redis: %w (log: %s)", err, tail(logPath))
	}
	c = costSince(ctx, rdb, before, calls)
	c.Wall = time.Since(start)
	c.Pages, _ = crawlCounters(ctx, rdb, streams.NewKeys(name).Stats)
	c.PagesLater = c.Pages // the process has exited
	return c, nil
}
