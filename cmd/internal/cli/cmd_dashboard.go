package cli

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/handlers/dashboard"
	"github.com/streamcrawl/streamcrawl/handlers/metrics"
)

// DefaultDashboardAddr is where `streamcrawl dashboard` serves unless --addr says.
const DefaultDashboardAddr = "127.0.0.1:8090"

func (a *App) dashboardCommand() *cobra.Command {
	var crawl, addr string
	var every time.Duration
	cmd := &cobra.Command{
		Use:   "dashboard --redis URL --crawl NAME [--addr 127.0.0.1:8090]",
		Short: "Serve a web dashboard of a crawl: live charts, slowest and failing hosts, dead letters with retry",
		Long: `dashboard serves one page with live charts of a crawl (pages and items per second,
frontier and backlog, pending per stage, Redis memory), its slowest and most failing
hosts, and its dead letters with a button that re-queues them (as 'dead retry' does).
The same address serves /metrics (the exporter's crawl figures), /healthz and /readyz.
It listens on loopback by default: anyone who reaches it can re-queue dead letters.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			rdb, err := a.connectCrawl(ctx, crawl)
			if err != nil {
				return err
			}
			defer rdb.Close()
			d, err := dashboard.New(dashboard.Config{Client: rdb, Crawl: crawl, Interval: every, Logger: a.Log})
			if err != nil {
				return err
			}
			m := metrics.New(metrics.Config{})
			m.Registry().MustRegister(metrics.NewCrawlCollector(ctx, rdb, metrics.Crawls(crawl), a.Log))
			rdb.AddHook(m.RedisHook())
			mux := http.NewServeMux()
			mh := metrics.Handler(m.Registry(), func(ctx context.Context) error { return rdb.Ping(ctx).Err() })
			mux.Handle("/metrics", mh)
			mux.Handle("/healthz", mh)
			mux.Handle("/readyz", mh)
			mux.Handle("/", d.Handler())
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("dashboard: cannot listen on %s (--addr): %w", addr, err)
			}
			go func() {
				if err := serve(ctx, ln, mux); err != nil {
					a.Log.Warn("dashboard server stopped", zap.Error(err))
				}
			}()
			a.Log.Info("dashboard", zap.String("url", "http://"+ln.Addr().String()+"/"), zap.String("crawl", crawl))
			return d.Run(ctx) // nil when ctx ends
		},
	}
	a.crawlFlags(cmd, &crawl)
	cmd.Flags().StringVar(&addr, "addr", DefaultDashboardAddr, "address to serve the dashboard on (port 0: a free one, logged)")
	cmd.Flags().DurationVar(&every, "interval", dashboard.DefaultInterval, "how often the crawl's figures are read from Redis")
	return cmd
}
