package cli

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

func (a *App) deadCommand() *cobra.Command {
	var crawl string
	var ids []string
	var asJSON bool
	var limit int64
	cmd := &cobra.Command{
		Use:   "dead list|retry|purge --redis URL --crawl NAME [--id ID...]",
		Short: "Show, re-queue or clear a crawl's dead letters",
		Long: `Entries that failed their stage too often (or could not be decoded, or whose fetch ran
out of retries) end in the crawl's dead-letter stream with the stage, the last error and
the delivery count.

  dead list    show them (--json for everything, including the original entry)
  dead retry   put them back on their stream (all, or --id ID...); a request starts
               its retries afresh
  dead purge   delete them (all, or --id ID...)`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"list", "retry", "purge"},
		RunE: a.onCrawl(&crawl, func(ctx context.Context, rdb *streams.Client, layout streams.Layout, args []string) error {
			switch args[0] {
			case "list":
				return a.deadList(ctx, rdb, layout, limit, asJSON)
			case "retry":
				return a.deadRetry(ctx, rdb, layout, ids)
			case "purge":
				n, err := inspect.PurgeDead(ctx, rdb, layout, ids)
				if err != nil {
					return err
				}
				fmt.Fprintf(a.Stdout, "purged %d dead letters of crawl %s\n", n, crawl)
				return nil
			}
			return fmt.Errorf("unknown action %q: want list, retry or purge", args[0])
		}),
	}
	a.crawlFlags(cmd, &crawl)
	cmd.Flags().StringSliceVar(&ids, "id", nil, "dead letters by ID, or by the entry ID the logs name (entry_id; the ENTRY ID column of list) (default: all)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "list as JSON")
	cmd.Flags().Int64Var(&limit, "limit", 1000, "list at most this many")
	return cmd
}

func (a *App) deadList(ctx context.Context, rdb redis.UniversalClient, l streams.Layout, limit int64, asJSON bool) error {
	dead, err := inspect.ListDead(ctx, rdb, l, limit)
	if err != nil {
		return err
	}
	for i := range dead {
		dead[i] = dead[i].Redacted() // no URL's credentials on a terminal
	}
	if asJSON {
		return a.printJSON(dead)
	}
	tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tENTRY ID\tSTAGE\tDELIVERIES\tURL\tERROR")
	for _, d := range dead {
		entry := d.EntryID
		if entry == "" {
			entry = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", d.ID, entry, d.Stage, d.Deliveries, deadURL(d), d.Error)
	}
	return tw.Flush()
}

// deadURL digs the page URL out of a dead letter's payload, for people.
func deadURL(d inspect.DeadLetter) string {
	if u := d.PageURL(); u != "" {
		return u
	}
	return "-"
}

func (a *App) deadRetry(ctx context.Context, rdb redis.UniversalClient, l streams.Layout, ids []string) error {
	n, err := handlers.RetryDead(ctx, rdb, l, ids)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.Stdout, "re-queued %d dead letters of crawl %s\n", n, l.Crawl)
	return nil
}
