package cli

import (
	"context"
	"fmt"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"

	"github.com/spf13/cobra"
)

func (a *App) resetCommand() *cobra.Command {
	var crawl string
	cmd := &cobra.Command{
		Use:   "reset --redis URL --crawl NAME",
		Short: "Delete every Redis key of a crawl to start it over",
		Long: `reset deletes the crawl's streams, seen set, stats and dead letters. Stop the crawl's
processes first: they cache what they learned from Redis, and reset refuses, naming them,
while any of them read from the crawl's streams in the last 15 seconds. Nothing else ever
deletes a crawl's state; stopping processes does not.`,
		RunE: a.onCrawl(&crawl, func(ctx context.Context, rdb *streams.Client, layout streams.Layout, _ []string) error {
			n, err := inspect.Reset(ctx, rdb, layout)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.Stdout, "crawl %s reset: %d keys deleted\n", crawl, n)
			return nil
		}),
	}
	a.crawlFlags(cmd, &crawl)
	return cmd
}
