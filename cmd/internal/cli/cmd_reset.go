package cli

import (
	"fmt"

	"github.com/streamcrawl/streamcrawl/streams/frontier"

	"github.com/spf13/cobra"
)

func (a *App) resetCommand() *cobra.Command {
	var crawl string
	cmd := &cobra.Command{
		Use:   "reset --redis URL --crawl NAME",
		Short: "Delete every Redis key of a crawl to start it over",
		Long: `reset deletes the crawl's streams, seen set, stats and dead letters. Stop the crawl's
processes first: they cache what they learned from Redis. Nothing else ever deletes a
crawl's state; stopping processes does not.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			rdb, layout, err := a.openCrawl(ctx, crawl)
			if err != nil {
				return err
			}
			defer rdb.Close()
			n, err := frontier.Reset(ctx, rdb, layout)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.Stdout, "crawl %s reset: %d keys deleted\n", crawl, n)
			return nil
		},
	}
	a.RedisFlags(cmd, false)
	cmd.Flags().StringVar(&crawl, "crawl", "", "crawl (spider) name (required)")
	return cmd
}
