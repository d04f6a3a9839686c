package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// fleetOptions are bench fleet's settings.
type fleetOptions struct {
	Scenarios   []string
	FetchParse  int // worker --stages fetch,parse processes
	Store       int // worker --stages store processes
	AllStages   int // workers with every stage
	Concurrency int // each worker's --concurrency

	Sites, Pages int // sites: crawls of Pages pages each, one per site

	Big, Small int     // fair: the big crawl's pages, the small one's
	MaxRatio   float64 // fair: the small crawl's time beside the big one over alone, at most

	Crawls      int     // memory: crawls one after another
	MemoryPages int     // memory: pages of each
	MaxGrowth   float64 // memory: a worker's RSS over the last 10 crawls over the first 10, at most

	CostPages    int     // cost: pages of the crawl
	MaxCostRatio float64 // cost: Redis commands and CPU per page, fleet over crawl --redis, at most

	Settings []string // KEY=VALUE lines added to every spider's settings

	Timeout time.Duration
	Keep    bool
}

// fleetScenarios are bench fleet's scenarios in the order they run.
var fleetScenarios = []string{"sites", "fair", "memory", "cost"}

func (a *app) fleetCommand() *cobra.Command {
	var o fleetOptions
	cmd := &cobra.Command{
		Use:   "fleet [--scenarios sites,fair,memory,cost] [--sites N --pages N] [--big N --small N] [--crawls N] [--cost-pages N]",
		Short: "Measure a fleet of worker processes serving many crawls: items, fair share, memory, Redis cost",
		Long: `fleet starts a redis-server of its own per scenario, demo shops served by this process on
loopback addresses of their own (127.0.0.x, one host each), and real "worker" processes
(--fetch-parse workers with --stages fetch,parse, --store with --stages store), then
submits crawls to the fleet's registry and measures:

  sites   --sites crawls of --pages pages, one per site, submitted at once: per crawl its
          items against the site's (missing, wrong, duplicates), the pages the site
          served more than once or never, wall time and pages/s overall. Fails on a
          missing or wrong item, duplicates over 1% or a page fetched twice or never.
  fair    a --small crawl alone, then the same beside a running --big crawl: its time
          from submit to done both ways. Fails when the ratio is over --max-ratio.
  memory  --crawls crawls of --memory-pages pages submitted one after another: each
          worker's RSS after each, the first 10 against the last 10. Fails when a
          worker's grew by more than --max-growth.
  cost    one crawl of --cost-pages pages through the fleet, then the same site by one
          "crawl --redis" process, each on a fresh redis-server: Redis commands (top
          level and inside scripts, script calls, wake-ups) and Redis CPU µs per page,
          with a row for a fleet of one worker with every stage. Fails when that one
          worker's commands or CPU per page are over --max-cost-ratio times crawl's (one
          process doing every stage either way).

Each scenario prints a table; the command exits non-zero when a check fails. Linux only
(it reads /proc, and binds 127.0.0.x).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, s := range o.Scenarios {
				if !slices.Contains(fleetScenarios, s) {
					return fmt.Errorf("--scenarios: unknown %q (want %s)", s, strings.Join(fleetScenarios, ", "))
				}
			}
			if o.FetchParse < 0 || o.Store < 0 || o.AllStages < 0 || o.FetchParse+o.AllStages < 1 || o.Store+o.AllStages < 1 {
				return errors.New("--fetch-parse, --store, --all-stages: want a worker for each stage")
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), o.Timeout)
			defer cancel()
			dir, err := os.MkdirTemp("", "streamcrawl-bench-fleet")
			if err != nil {
				return err
			}
			if o.Keep {
				fmt.Fprintf(a.Stdout, "work directory (kept): %s\n", dir)
			} else {
				defer os.RemoveAll(dir)
			}
			fmt.Fprintf(a.Stdout, "bench fleet: %d worker(s) --stages fetch,parse, %d --stages store and %d with every stage, --concurrency %d each\n",
				o.FetchParse, o.Store, o.AllStages, o.Concurrency)
			var failed []error
			for _, s := range fleetScenarios {
				if !slices.Contains(o.Scenarios, s) {
					continue
				}
				sdir := dir + "/" + s
				if err := os.Mkdir(sdir, 0o755); err != nil {
					return err
				}
				run := map[string]func(context.Context, *fleetOptions, string) error{
					"sites": a.fleetSites, "fair": a.fleetFair, "memory": a.fleetMemory, "cost": a.fleetCost,
				}[s]
				fmt.Fprintf(a.Stdout, "\n## %s\n\n", s)
				if err := run(ctx, &o, sdir); err != nil {
					fmt.Fprintf(a.Stdout, "FAIL %s: %v\n", s, err)
					failed = append(failed, fmt.Errorf("%s: %w", s, err))
				}
			}
			return errors.Join(failed...)
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&o.Scenarios, "scenarios", fleetScenarios, "the scenarios to run: any of sites, fair, memory, cost")
	fl.IntVar(&o.FetchParse, "fetch-parse", 2, "worker processes with --stages fetch,parse")
	fl.IntVar(&o.Store, "store", 1, "worker processes with --stages store")
	fl.IntVar(&o.AllStages, "all-stages", 0, "worker processes with every stage (--stages fetch,parse,store)")
	fl.IntVar(&o.Concurrency, "concurrency", 64, "each worker's --concurrency (shared by its crawls)")
	fl.IntVar(&o.Sites, "sites", 20, "sites: crawls, one per site, each its own host (127.0.0.x)")
	fl.IntVar(&o.Pages, "pages", 2000, "sites: pages of each site")
	fl.IntVar(&o.Big, "big", 200000, "fair: pages of the big crawl (it must still run when the small one ends)")
	fl.IntVar(&o.Small, "small", 500, "fair: pages of the small crawl")
	fl.Float64Var(&o.MaxRatio, "max-ratio", 2, "fair: the small crawl's time beside the big one over its time alone, at most")
	fl.IntVar(&o.Crawls, "crawls", 50, "memory: crawls submitted one after another")
	fl.IntVar(&o.MemoryPages, "memory-pages", 500, "memory: pages of each crawl")
	fl.Float64Var(&o.MaxGrowth, "max-growth", 1.3, "memory: a worker's mean RSS after the last 10 crawls over after the first 10, at most")
	fl.IntVar(&o.CostPages, "cost-pages", 5000, "cost: pages of the crawl")
	fl.Float64Var(&o.MaxCostRatio, "max-cost-ratio", 1.1, "cost: Redis commands and CPU per page through a fleet of one worker over crawl --redis's, at most")
	fl.StringArrayVar(&o.Settings, "spider-setting", nil, "add KEY=VALUE to every spider's settings (repeatable): response_dict=off, say")
	fl.DurationVar(&o.Timeout, "timeout", 3*time.Hour, "give up after this long")
	fl.BoolVar(&o.Keep, "keep", false, "keep the work directory (worker logs, items files)")
	return cmd
}
