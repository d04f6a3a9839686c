package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
)

func (a *app) chaosCommand() *cobra.Command {
	opt := chaosOptions{}
	var keep bool
	cmd := &cobra.Command{
		Use:   "chaos [--pages N] [--procs N] [--kill-every D] [--kills N] [--redis URL]",
		Short: "Crawl the demo shop with several processes per stage while killing them; check nothing is lost",
		Long: `chaos serves the demo shop on loopback, runs --procs worker processes per stage against
a real Redis (--redis, or a throw-away redis-server from PATH), and every --kill-every
sends SIGKILL to a random worker and restarts it under a new consumer name, so its
pending entries must be taken over by another consumer (XAUTOCLAIM). When the crawl is
done it checks the outcome against the site's ground truth and prints a table: pages,
kills, restarts, lost pages, lost items, corrupt lines, duplicate fetches, duplicate
items, and the time from each kill to the redelivery of the killed worker's entries.
It exits 1 when anything was lost.`,
		Args: cobra.NoArgs,
		RunE: a.inBenchEnv("chaos", &keep, func(ctx context.Context, url, dir string) error {
			opt.RedisURL, opt.Dir = url, dir
			opt.Log = a.Stdout
			rep, err := runChaos(ctx, opt)
			if rep != nil {
				rep.print(a.Stdout, opt)
			}
			if keep {
				fmt.Fprintf(a.Stdout, "worker logs and item files kept in %s\n", opt.Dir)
			}
			if err != nil {
				return err
			}
			if !rep.ok() {
				return errors.New("chaos: the crawl lost or corrupted something (see the table)")
			}
			return nil
		}),
	}
	fl := cmd.Flags()
	fl.StringVar(&a.RedisURL, "redis", "", "Redis URL (default $REDIS_URL, else a throw-away redis-server)")
	fl.IntVar(&opt.Pages, "pages", 5000, "pages of the demo shop")
	fl.IntVar(&opt.Procs, "procs", 2, "worker processes per stage")
	fl.DurationVar(&opt.KillEvery, "kill-every", 3*time.Second, "kill a random worker this often")
	fl.IntVar(&opt.MaxKills, "kills", 0, "stop killing after this many kills (0: keep killing until done)")
	fl.DurationVar(&opt.RestartAfter, "restart-after", 500*time.Millisecond, "restart a killed worker after this")
	fl.DurationVar(&opt.MinIdle, "min-idle", 5*time.Second, "workers' --min-idle")
	fl.DurationVar(&opt.ClaimInterval, "claim-interval", time.Second, "workers' --claim-interval")
	fl.DurationVar(&opt.RetryBackoff, "retry-backoff", 100*time.Millisecond, "workers' --retry-backoff")
	fl.DurationVar(&opt.Timeout, "timeout", 10*time.Minute, "give up after this")
	fl.DurationVar(&opt.Latency, "site-latency", 50*time.Millisecond, "the demo shop answers after this, so the crawl lasts long enough to kill into")
	fl.IntVar(&opt.Concurrency, "concurrency", 4, "the spider's settings.concurrency (requests in flight per fetch process)")
	fl.BoolVar(&keep, "keep", false, "keep the work directory (worker logs, item files)")
	return cmd
}
