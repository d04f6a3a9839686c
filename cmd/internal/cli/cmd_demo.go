package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/spiders/demosite"
)

func (a *App) demoSiteCommand() *cobra.Command {
	var addr, spiderOut string
	var pages, pageSize int
	var latency time.Duration
	cmd := &cobra.Command{
		Use:   "demo-site [--addr 127.0.0.1:8080] [--pages N] [--page-size BYTES] [--latency D]",
		Short: "Serve the bundled deterministic demo shop for demos, tests and benchmarks",
		Long: `demo-site serves a deterministic shop of about N pages: a home page, paged categories,
product pages with related products, duplicate and tracking-parameter links, a robots.txt,
some 404 and 500 pages and non-HTML resources. The same N always gives the same site.
It prints "listening on URL" once it accepts connections.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			site := demosite.New(pages)
			site.SetPageSize(pageSize)
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("demo-site: %w", err)
			}
			base := "http://" + ln.Addr().String() + "/"
			if spiderOut != "" {
				if err := os.WriteFile(spiderOut, []byte(site.SpiderYAML("shop", base)), 0o644); err != nil {
					return err
				}
			}
			fmt.Fprintf(a.Stdout, "listening on %s\n", base)
			return Serve(cmd.Context(), ln, demosite.WithLatency(site, latency))
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8080", "address to listen on")
	cmd.Flags().IntVar(&pages, "pages", 2000, "approximate number of pages")
	cmd.Flags().IntVar(&pageSize, "page-size", 0, "pad every HTML page to about this many bytes with text (no links, no item fields); 0 serves pages as they are (9-20 KB)")
	cmd.Flags().StringVar(&spiderOut, "spider-out", "", "also write a YAML spider for the site to this file")
	cmd.Flags().DurationVar(&latency, "latency", 0, "answer every request after this long (a slow site, for benchmarks)")
	return cmd
}

// Serve serves h on ln until ctx ends, then shuts the server down, giving requests in
// flight up to 5 s. It returns nil when ctx ended, else the error that stopped it.
func Serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func (a *App) demoCommand() *cobra.Command {
	var f RunFlags
	var pages int
	cmd := &cobra.Command{
		Use:   "demo [--pages N] [--out FILE]",
		Short: "Crawl the bundled demo shop with an embedded Redis and write its items to a file",
		Long: `demo starts the demo shop on a free loopback port and crawls it with every stage in
this process and an embedded Redis (or --redis), writing the products it scrapes to a
JSONL file in the current directory. Nothing needs to be installed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			site := demosite.New(pages)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return err
			}
			sctx, stopSite := context.WithCancel(ctx)
			defer stopSite()
			go func() { _ = Serve(sctx, ln, site) }()
			base := "http://" + ln.Addr().String() + "/"
			sp, warnings, err := spiders.Parse("demo.yaml", []byte(site.SpiderYAML("demo", base)))
			if err != nil {
				return err
			}
			for _, w := range warnings {
				a.Log.Debug(w)
			}
			sp.Warnings = nil // logged: not again by handlers.Crawl
			if f.Out == "" {
				f.Out = "demo-items.jsonl"
			}
			if err := os.Remove(f.Out); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			fmt.Fprintf(a.Stdout, "demo shop of %d pages at %s\n", pages, base)
			if _, err := a.crawlHere(ctx, sp, &f, true); err != nil || ctx.Err() != nil {
				return a.endInterrupted(ctx, "demo", err)
			}
			fmt.Fprintf(a.Stdout, "\n%d products on the site; items written to %s\n", len(site.Products()), f.Out)
			return nil
		},
	}
	a.RedisFlags(cmd, true)
	f.Add(cmd, true, handlers.AllStages...)
	f.AddMetrics(cmd)
	cmd.Flags().DurationVar(&a.progressEvery, "progress-interval", 0, "refresh of the progress line on stderr (default 500ms on a terminal, redrawn in place; 5s otherwise, one plain line each)")
	cmd.Flags().IntVar(&pages, "pages", 2000, "approximate number of pages of the demo shop")
	cmd.Flags().Lookup("out").Usage = "JSONL file for the items (default demo-items.jsonl; replaced)"
	_ = cmd.Flags().Set("retry-backoff", "200ms")
	cmd.Flags().Lookup("retry-backoff").DefValue = "200ms"
	return cmd
}
