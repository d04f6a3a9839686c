package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/streamcrawl/streamcrawl/streams"
)

func (a *app) statusCommand() *cobra.Command {
	var crawl string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status --redis URL --crawl NAME [--json]",
		Short: "Show a crawl's streams, groups, frontier, seen URLs, items and dead letters",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			rdb, layout, err := a.openCrawl(ctx, crawl)
			if err != nil {
				return err
			}
			defer rdb.Close()
			st, err := streams.ReadStatus(ctx, rdb, layout)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(st)
			}
			printStatus(a.stdout, st)
			return nil
		},
	}
	a.redisFlags(cmd, false)
	cmd.Flags().StringVar(&crawl, "crawl", "", "crawl (spider) name (required)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printStatus(w io.Writer, st *streams.Status) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "crawl\t%s\tdone=%v\n", st.Crawl, st.Done)
	fmt.Fprintf(tw, "frontier\t%d\trequests waiting in priority order\n", st.Frontier)
	fmt.Fprintf(tw, "queued\t%d\trequests in the stream, not yet read by a fetcher\n", st.Queued)
	fmt.Fprintf(tw, "delayed\t%d\trequests waiting for a retry or politeness time\n", st.Delayed)
	fmt.Fprintf(tw, "seen\t%d\turls (%d bytes in Redis)\n", st.Seen, st.SeenBytes)
	fmt.Fprintf(tw, "items stored\t%d\n", st.ItemsStored)
	fmt.Fprintf(tw, "dead letters\t%d\n", st.DeadLetters)
	fmt.Fprintf(tw, "memory\tstreams %s, items %s, frontier %s, dedup %s\n", mib(st.Memory["streams"]),
		mib(st.Memory["items"]), mib(st.Memory["frontier"]), mib(st.Memory["dedup"]))
	fmt.Fprintln(tw, "\nSTREAM\tLENGTH\tBYTES\tGROUP\tPENDING\tLAG\tCONSUMERS\tRETENTION")
	for _, s := range st.Streams {
		ret := s.Retention
		if ret == "" {
			ret = "-"
		}
		if len(s.Groups) == 0 {
			fmt.Fprintf(tw, "%s\t%d\t%d\t-\t\t\t\t%s\n", s.Name, s.Length, s.Bytes, ret)
		}
		for _, g := range s.Groups {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%d\t%d\t%d\t%s\n", s.Name, s.Length, s.Bytes, g.Name, g.Pending, g.Lag, g.Consumers, ret)
		}
	}
	if len(st.Partitions) > 0 {
		fmt.Fprintln(tw, "\nPARTITION\tREQUESTS\tRESPONSES\tITEMS\tFRONTIER\tBYTES")
		for _, p := range st.Partitions {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\n", p.Tag, p.Requests, p.Responses, p.Items, p.Frontier, p.Bytes)
		}
	}
	if len(st.Nodes) > 0 {
		fmt.Fprintln(tw, "\nMASTER\tKEYS\tUSED MEMORY\tPARTITIONS")
		for _, n := range st.Nodes {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%v\n", n.Addr, n.Keys, mib(n.UsedMemory), n.Partitions)
		}
	}
	if len(st.Stats) > 0 {
		fmt.Fprintln(tw, "\nCOUNTER\tVALUE")
		names := make([]string, 0, len(st.Stats))
		for k := range st.Stats {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			fmt.Fprintf(tw, "%s\t%d\n", k, st.Stats[k])
		}
	}
	_ = tw.Flush()
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
