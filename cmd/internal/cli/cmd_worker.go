package cli

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/handlers/fleet"
)

// workerCommand runs a fleet worker: the stages it names for every active crawl of the
// registry.
func (a *App) workerCommand() *cobra.Command {
	var f RunFlags
	var stages []string
	var concurrency int
	cmd := &cobra.Command{
		Use:   "worker --redis URL [--stages fetch,parse,store] [--out TEMPLATE] [--concurrency N]",
		Short: "Serve every active crawl of the fleet: the stages named, for each crawl submitted",
		Long: `Serve every active crawl of the fleet's registry in Redis (queued or running), with
the stages named, and keep serving as crawls are submitted, paused, resumed or end: a
new crawl is picked up within a second or so, a paused or ended one is stopped, a new
version of a crawl's spider is served once the old run has stopped.

The worker's --concurrency is shared by the active crawls in proportion to their
weights: each crawl's fetch, parse and store stages take at most its share of messages
in flight. The store stage writes a crawl's items to its spider's sink (the sink key of
its YAML), else to --out, in which {crawl} is replaced by the crawl's name.

Start any number of workers, on any machines, against the same Redis. SIGINT/SIGTERM
stop every crawl's stages gracefully (in-flight work finished and acked, up to
--shutdown-timeout) and exit 0. A worker holds up to 64 Redis connections unless
--redis-pool-size says.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			return a.endInterrupted(ctx, "worker", a.runWorker(ctx, &f, stages, concurrency))
		},
	}
	a.RedisFlags(cmd, false)
	a.redisWaitFlag(cmd)
	f.Add(cmd, false, handlers.AllStages...)
	fl := cmd.Flags()
	fl.StringSliceVar(&stages, "stages", handlers.AllStages, "the stages this worker runs for every crawl: any of fetch, parse, store")
	fl.StringVar(&f.Out, "out", fleet.DefaultOut, "where the store stage writes a crawl's items when its spider has no sink: a template in which {crawl} is the crawl's name (FILE.jsonl, FILE.csv), a postgres://user:pass@host/db?table=items URL, or \"stream\"")
	fl.IntVar(&concurrency, "concurrency", fleet.DefaultConcurrency, "messages in flight per stage, shared by the active crawls by weight")
	return cmd
}

// workerPoolSize is a worker's Redis pool unless --redis-pool-size says: each crawl's
// stages hold connections in blocking reads, so a worker serving several crawls needs
// more than a one-crawl process.
const workerPoolSize = 64

// runWorker serves the fleet until ctx ends.
func (a *App) runWorker(ctx context.Context, f *RunFlags, stages []string, concurrency int) error {
	for i, s := range stages {
		stages[i] = strings.TrimSpace(s)
		if err := validStage(stages[i]); err != nil {
			return err
		}
	}
	if a.poolSize == 0 {
		a.poolSize = workerPoolSize
	}
	rdb, err := a.connectWorker(ctx, true)
	if err != nil {
		return err
	}
	defer rdb.Close()
	base, err := f.options()
	if err != nil {
		return err
	}
	return fleet.Serve(ctx, fleet.WorkerOptions{Client: rdb, Stages: stages, Consumer: base.Consumer, Out: f.Out,
		Concurrency: concurrency, Base: base, Logger: a.Log})
}
