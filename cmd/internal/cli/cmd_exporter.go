package cli

import (
	"github.com/spf13/cobra"

	"github.com/streamcrawl/streamcrawl/handlers/metrics"
)

// DefaultExporterAddr is where `streamcrawl exporter` serves unless --metrics-addr says.
const DefaultExporterAddr = "127.0.0.1:9101"

func (a *App) exporterCommand() *cobra.Command {
	var crawls []string
	var addr string
	cmd := &cobra.Command{
		Use:   "exporter --redis URL [--crawl NAME...] [--metrics-addr ADDR]",
		Short: "Serve Prometheus metrics of whole crawls (streams, groups, frontier, dead letters) read from Redis",
		Long: `exporter serves the figures of whole crawls, read from Redis at each scrape: stream
length and bytes, per group pending, lag and consumers, frontier size, delayed and queued
requests, dead letters, seen URLs, items stored, the crawl's shared counters and Redis
memory. Run one per deployment; the workers' own --metrics-addr serve per-process figures.
Without --crawl it serves every crawl registered with the fleet (streamcrawl submit),
following the registry: a crawl submitted shows up and a deleted one goes at the next
scrape (the registry is read again only when it changed). It then also serves each
crawl's state (streamcrawl_crawl_state) and the fleet's ready fetch work
(streamcrawl_fleet_ready_requests: the requests a new worker could start at once, summed
over the queued and running crawls; what an autoscaler scales workers on).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if len(crawls) == 0 {
				rdb, err := a.Connect(ctx, true)
				if err != nil {
					return err
				}
				defer rdb.Close()
				a.Log.Info("serving the crawls registered with the fleet")
				coll := metrics.NewFleetCollector(ctx, metrics.NewSampler(rdb, 0), fleetCrawls(rdb), a.Log)
				if _, err := a.serveMetrics(ctx, addr, rdb, "", nil, coll); err != nil {
					return err
				}
				<-ctx.Done()
				return nil
			}
			rdb, err := a.connectExisting(ctx, crawls, false)
			if err != nil {
				return err
			}
			defer rdb.Close()
			coll := metrics.NewCrawlCollector(ctx, metrics.NewSampler(rdb, 0), metrics.Crawls(crawls...), a.Log)
			if _, err := a.serveMetrics(ctx, addr, rdb, "", nil, coll); err != nil {
				return err
			}
			<-ctx.Done()
			return nil
		},
	}
	a.RedisFlags(cmd, false)
	cmd.Flags().StringSliceVar(&crawls, "crawl", nil, "crawl (spider) name; repeat or separate by commas for several (default: every crawl registered with the fleet)")
	cmd.Flags().StringVar(&addr, "metrics-addr", DefaultExporterAddr, "address to serve /metrics, /healthz and /readyz on")
	return cmd
}
