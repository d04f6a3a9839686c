package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

func (a *App) groupsCommand() *cobra.Command {
	var crawl, stream, group, id string
	cmd := &cobra.Command{
		Use:   "groups list|create|setid|delete --redis URL --crawl NAME [--stream items] [--group NAME] [--id ID]",
		Short: "List and manage the consumer groups of a crawl's stream",
		Long: `groups shows who reads a stream (list) and manages post-processor and replay groups:
create one at --id, move one with XGROUP SETID (setid), or delete one. The stage groups
(fetch, parse, store) cannot be created, moved or deleted here.

--stream is requests, responses or items (default items).`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"list", "create", "setid", "delete"},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if stream != "requests" && stream != "responses" && stream != "items" {
				return fmt.Errorf("--stream %q: want requests, responses or items", stream)
			}
			rdb, layout, err := a.openCrawl(ctx, crawl)
			if err != nil {
				return err
			}
			defer rdb.Close()
			if args[0] != "list" {
				if group == "" {
					return fmt.Errorf("--group is required")
				}
				if group == streams.StageFetch || group == streams.StageParse || group == streams.StageStore {
					return inspect.ErrStageGroup
				}
			}
			pos, err := inspect.ParsePosition(id, time.Now())
			if err != nil {
				return err
			}
			if args[0] == "create" || args[0] == "setid" {
				pos, _ = inspect.GroupStart(id, time.Now()) // the ID the group starts after
			}
			tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
			if args[0] == "list" {
				fmt.Fprintln(tw, "STREAM\tGROUP\tCONSUMERS\tPENDING\tLAG\tLAST-DELIVERED")
			}
			// A partitioned crawl has the stream once per partition: act on each.
			for _, k := range layout.Parts {
				key := map[string]string{"requests": k.Requests, "responses": k.Responses, "items": k.Items}[stream]
				switch args[0] {
				case "list":
					groups, err := rdb.XInfoGroups(ctx, key).Result()
					if err != nil && strings.Contains(err.Error(), "no such key") {
						continue // the stream has no entry yet: no group reads it
					}
					if err != nil {
						return fmt.Errorf("groups of %s: %w", key, err)
					}
					for _, g := range groups {
						fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\n", key, g.Name, g.Consumers, g.Pending, g.Lag, g.LastDeliveredID)
					}
				case "create", "setid":
					if err := inspect.CreateGroup(ctx, rdb, key, group, pos, args[0] == "setid"); err != nil {
						return err
					}
					fmt.Fprintf(a.Stdout, "group %s on %s delivers entries after %s\n", group, key, pos)
				case "delete":
					n, err := rdb.XGroupDestroy(ctx, key, group).Result()
					if err != nil {
						return fmt.Errorf("delete group %s: %w", group, err)
					}
					fmt.Fprintf(a.Stdout, "deleted %d group(s)\n", n)
				default:
					return fmt.Errorf("unknown action %q: want list, create, setid or delete", args[0])
				}
			}
			return tw.Flush()
		},
	}
	a.crawlFlags(cmd, &crawl)
	fl := cmd.Flags()
	fl.StringVar(&stream, "stream", "items", "requests, responses or items")
	fl.StringVar(&group, "group", "", "group name")
	fl.StringVar(&id, "id", "0", "first entry the group delivers (create, setid): ID, RFC 3339 time, duration ago, 0, or $")
	return cmd
}
