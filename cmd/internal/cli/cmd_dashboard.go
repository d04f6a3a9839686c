package cli

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/handlers/dashboard"
	"github.com/streamcrawl/streamcrawl/handlers/fleet"
	"github.com/streamcrawl/streamcrawl/handlers/metrics"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// DefaultDashboardAddr is where `streamcrawl dashboard` serves unless --addr says.
const DefaultDashboardAddr = "127.0.0.1:8090"

func (a *App) dashboardCommand() *cobra.Command {
	var crawl, addr string
	var allowHosts []string
	var every time.Duration
	cmd := &cobra.Command{
		Use:   "dashboard --redis URL [--crawl NAME] [--addr 127.0.0.1:8090]",
		Short: "Serve a web dashboard of a crawl: live charts, slowest and failing hosts, dead letters with retry",
		Long: `dashboard serves one page with live charts of a crawl (pages and items per second,
frontier and backlog, pending per stage, Redis memory), its slowest and most failing
hosts, and its dead letters with a button that re-queues them (as 'dead retry' does).
The same address serves /metrics (the exporter's crawl figures), /healthz and /readyz.
It listens on loopback by default: it has no login, and anyone who reaches it can
read the dead letters and re-queue them. The page and its API answer only requests
addressed to an IP address or localhost, or to a name given with --allow-host (a
page of another site that points its name at this address is refused).
Without --crawl, when crawls are registered with the fleet (streamcrawl submit), it
opens on the fleet page: every registered crawl with its state, pages/s (over the page's
last 10 s), items, requests waiting, dead letters and last error, pause and resume
buttons, and each crawl's own page one click away (/crawls/NAME/); /metrics then serves
every registered crawl as the exporter does. With no crawl registered it looks for the
crawls in Redis: it shows the only one, or lists them and asks which (on a terminal;
elsewhere it names them and exits). The page and
/metrics share one read of the crawl per --interval, and nothing is read while neither
is looked at.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			var rdb *streams.Client
			var err error
			if crawl != "" {
				rdb, err = a.connectCrawl(ctx, crawl) // the crawl must exist
			} else {
				rdb, err = a.Connect(ctx, true)
			}
			if err != nil {
				return err
			}
			defer rdb.Close()
			inFleet := false
			if crawl == "" {
				// A user that may not read the registry (a viewer given only a crawl's
				// keys) still gets the crawls found in Redis.
				list, err := fleet.New(rdb).List(ctx)
				if err != nil {
					a.Log.Warn("cannot read the fleet's registry: looking for crawls in Redis instead", zap.Error(err))
				}
				if inFleet = len(list) > 0; inFleet {
					a.Log.Info("showing the fleet's crawls", zap.Int("crawls", len(list)))
				} else if crawl, err = a.pickCrawl(ctx, rdb); err != nil {
					return err
				}
			}
			smp := metrics.NewSampler(rdb, every)
			d, err := dashboard.New(dashboard.Config{Client: rdb, Crawl: crawl, Interval: every, Sampler: smp, AllowHosts: allowHosts, Logger: a.Log})
			if err != nil {
				return err
			}
			m := metrics.New(metrics.Config{})
			if inFleet {
				m.Registry().MustRegister(metrics.NewFleetCollector(ctx, smp, fleetCrawls(rdb), a.Log))
			} else {
				m.Registry().MustRegister(metrics.NewCrawlCollector(ctx, smp, metrics.Crawls(crawl), a.Log))
			}
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
			if dashboard.NonLoopback(ln.Addr()) {
				a.Log.Warn("the dashboard listens on an address other machines can reach, and has no authentication: "+
					"anyone who reaches it can read the dead letters and re-queue them. Bind it to 127.0.0.1 and put it behind "+
					"a reverse proxy that authenticates (then --allow-host the proxy's name), or firewall the port",
					zap.String("addr", ln.Addr().String()))
			}
			go func() {
				if err := d.Serve(ctx, ln, mux); err != nil {
					a.Log.Warn("dashboard server stopped", zap.Error(err))
				}
			}()
			a.Log.Info("dashboard", zap.String("url", "http://"+ln.Addr().String()+"/"), zap.String("crawl", crawl))
			return d.Run(ctx) // nil when ctx ends
		},
	}
	a.RedisFlags(cmd, false)
	cmd.Flags().StringVar(&crawl, "crawl", "", "crawl (spider) name (default: the fleet page when crawls are registered, else the only crawl in Redis, or one picked from those found)")
	cmd.Flags().StringVar(&addr, "addr", DefaultDashboardAddr, "address to serve the dashboard on (port 0: a free one, logged)")
	cmd.Flags().StringSliceVar(&allowHosts, "allow-host", nil, "a host name the page and its API answer to besides IP addresses and localhost (e.g. the name of the reverse proxy in front); repeat or separate by commas for several")
	cmd.Flags().DurationVar(&every, "interval", dashboard.DefaultInterval, "how often the crawl's figures are read from Redis")
	return cmd
}

// pickCrawl returns the crawl to show when none was named: the only one in Redis, or
// the one picked from a numbered list on a terminal; elsewhere an error naming them.
func (a *App) pickCrawl(ctx context.Context, rdb *streams.Client) (string, error) {
	names, err := inspect.ListCrawls(ctx, rdb)
	if err != nil {
		return "", err
	}
	switch {
	case len(names) == 0:
		return "", fmt.Errorf("no crawl in Redis at %s: name one with --crawl, or seed one first", rdb.Addr)
	case len(names) == 1:
		a.Log.Info("showing the only crawl in Redis", zap.String("crawl", names[0]))
		return names[0], nil
	}
	// Ask only a person at a terminal: both ends are one (isTerminal takes /dev/null
	// for one).
	in, ok := a.Stdin.(*os.File)
	out, ok2 := a.Stdout.(*os.File)
	if !ok || !ok2 || !isTerminal(in) || !isTerminal(out) {
		return "", fmt.Errorf("%d crawls in Redis at %s (%s): name one with --crawl", len(names), rdb.Addr, strings.Join(names, ", "))
	}
	fmt.Fprintf(a.Stdout, "crawls in Redis at %s:\n", rdb.Addr)
	for i, n := range names {
		fmt.Fprintf(a.Stdout, "  %d  %s\n", i+1, n)
	}
	r := bufio.NewReader(in)
	for {
		fmt.Fprintf(a.Stdout, "show which (1-%d)? ", len(names))
		line, err := r.ReadString('\n')
		if i, perr := strconv.Atoi(strings.TrimSpace(line)); perr == nil && i >= 1 && i <= len(names) {
			return names[i-1], nil
		}
		if err != nil {
			return "", fmt.Errorf("no crawl picked: %w", err)
		}
	}
}
