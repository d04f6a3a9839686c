package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/streamcrawl/streamcrawl/handlers/fleet"
)

// rateSpan is how far apart crawls reads each crawl's pages counter for its pages/s:
// Redis keeps no rate of its own (status --watch and the dashboard keep their samples
// in memory), so a one-off look takes two.
const rateSpan = time.Second

func (a *App) crawlsCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "crawls --redis URL [--json]",
		Short: "List the fleet's crawls with their state and figures",
		Long: `crawls lists every crawl registered with the fleet (streamcrawl submit), one row each:
its state (queued, running, paused, scheduled, resetting between two scheduled runs, done,
failed, cancelled, deleting), version, weight, pages/s, pages fetched, items stored, requests waiting, dead letters and last error
(shortened in the table, whole with --json). The figures are those status reads, from the
counters the crawl keeps (the same cost for a crawl of any size). Redis keeps no rate, so
pages/s is two reads of each crawl's pages counter 1 s apart: crawls takes about a second.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			rdb, err := a.Connect(ctx, true)
			if err != nil {
				return err
			}
			defer rdb.Close()
			rows, err := fleet.ReadRows(ctx, rdb, rateSpan)
			if err != nil {
				return err
			}
			if asJSON {
				if rows == nil {
					rows = []fleet.Row{} // [] for scripts, not null
				}
				return a.printJSON(rows)
			}
			if len(rows) == 0 {
				fmt.Fprintln(a.Stdout, "no crawls registered")
				return nil
			}
			printCrawls(a.Stdout, rows)
			return nil
		},
	}
	a.RedisFlags(cmd, false)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON: an array of crawls, every field whole")
	return cmd
}

// lastErrorWidth is how much of a crawl's last error the table shows.
const lastErrorWidth = 60

func printCrawls(w io.Writer, rows []fleet.Row) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATE\tVERSION\tWEIGHT\tPAGES/S\tPAGES\tITEMS\tWAITING\tDEAD\tLAST ERROR")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.1f\t%d\t%d\t%d\t%d\t%s\n", r.Name, r.State, r.Version, r.Weight,
			r.PagesPerSec, r.PagesFetched, r.Items, r.Waiting, r.DeadLetters, shorten(r.LastError, lastErrorWidth))
	}
	_ = tw.Flush()
}

// shorten returns the first line of s, cut to n runes with an ellipsis; "-" for none.
func shorten(s string, n int) string {
	s, _, cut := strings.Cut(strings.TrimSpace(s), "\n")
	if s == "" {
		return "-"
	}
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	} else if cut {
		return s + " …"
	}
	return s
}
