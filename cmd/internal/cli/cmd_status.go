package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

func (a *App) statusCommand() *cobra.Command {
	var crawl string
	var asJSON, watch, deep bool
	var every time.Duration
	cmd := &cobra.Command{
		Use:   "status --redis URL --crawl NAME [--deep] [--json | --watch [--interval D]]",
		Short: "Show a crawl's streams, groups, frontier, seen URLs, items and dead letters",
		RunE: a.onCrawl(&crawl, func(ctx context.Context, rdb *streams.Client, layout streams.Layout, _ []string) error {
			if deep {
				// An exact count of the dedup's keys and bytes (a paced scan, at most one a
				// minute per crawl); ReadStatus shows what it recorded.
				if _, err := inspect.ReadDeep(ctx, rdb, layout); err != nil {
					return err
				}
			}
			st, err := inspect.ReadStatus(ctx, rdb, layout)
			if err == nil {
				err = inspect.ReadBlockedHosts(ctx, rdb, layout, st)
			}
			if err != nil {
				return err
			}
			if watch {
				return a.watchStatus(ctx, rdb, layout, every)
			}
			if asJSON {
				return a.printJSON(st)
			}
			printStatus(a.Stdout, st)
			return nil
		}),
	}
	a.crawlFlags(cmd, &crawl)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&deep, "deep", false, "also measure the dedup's exact bytes and URLs (a scan of its keys, two commands each; at most one a minute per crawl, else the last one's figures)")
	cmd.Flags().BoolVar(&watch, "watch", false, "refresh until interrupted: in place on a terminal (rates over the last 10 s, consumers alive and pending per stage, frontier, ETA, dead letters, Redis memory), one line per refresh otherwise")
	cmd.Flags().DurationVar(&every, "interval", 2*time.Second, "refresh interval of --watch")
	return cmd
}

// watchStatus shows the crawl's live view every interval until ctx ends.
func (a *App) watchStatus(ctx context.Context, rdb redis.UniversalClient, l streams.Layout, every time.Duration) error {
	if every <= 0 {
		return fmt.Errorf("--interval must be positive, got %s", every)
	}
	f, ok := a.Stdout.(*os.File)
	tty := ok && isTerminal(f)
	var r rates
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		v, err := readWatchView(ctx, rdb, l, &r)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			fmt.Fprintf(a.Stdout, "%s cannot read the crawl's status: %v\n", time.Now().Format("15:04:05"), err)
		case tty:
			var b bytes.Buffer
			b.WriteString("\x1b[H\x1b[2J") // home, clear screen: one write per refresh
			v.print(&b, every)
			_, _ = a.Stdout.Write(b.Bytes())
		default:
			fmt.Fprintln(a.Stdout, v.line())
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func printStatus(w io.Writer, st *inspect.Status) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "crawl\t%s\tdone=%v\n", st.Crawl, st.Done)
	if st.SeedError != "" {
		fmt.Fprintf(tw, "ERROR\t%s\n", st.SeedError)
	}
	if st.Failover != "" {
		fmt.Fprintf(tw, "WARNING\tredis failed over %s\twith durability async: writes the old primary acknowledged may be lost, pages may be missing\n", st.Failover)
	}
	fmt.Fprintf(tw, "frontier\t%d\trequests waiting in their hosts' queues\n", st.Frontier)
	fmt.Fprintf(tw, "hosts\t%d ready, %d scheduled, %d blocked\tready: may start a request now; scheduled: waiting for their delay or back-off; blocked: every slot taken (per_host_concurrency in flight)\n",
		st.HostsReady, st.HostsScheduled, st.HostsBlocked)
	fmt.Fprintf(tw, "queued\t%d\trequests in the stream, not yet read by a fetcher\n", st.Queued)
	fmt.Fprintf(tw, "delayed\t%d\trequests waiting for a retry time\n", st.Delayed)
	if r := st.Revisits; r.Scheduled > 0 || st.Continuous.On {
		fmt.Fprintf(tw, "revisits\t%d\tscheduled: %d due now (%d overdue), %d in the next hour%s\n", r.Scheduled, r.DueNow, r.Overdue, r.NextHour, continuousNote(st.Continuous))
	}
	if st.Deep != nil {
		fmt.Fprintf(tw, "seen\t%d\turls (%d bytes in Redis at %s, status --deep)\n", st.Seen, st.SeenBytes, st.Deep.At.Format(time.RFC3339))
	} else {
		fmt.Fprintf(tw, "seen\t%d\turls (bytes in Redis: status --deep measures them)\n", st.Seen)
	}
	fmt.Fprintf(tw, "items stored\t%d\n", st.ItemsStored)
	if n := st.Stats["items_unchanged"]; n > 0 {
		fmt.Fprintf(tw, "items unchanged\t%d\tversioned items whose values were their key's last version: not emitted again\n", n)
	}
	fmt.Fprintf(tw, "dead letters\t%d\n", st.DeadLetters)
	dedupMem := "(status --deep)"
	if st.Deep != nil {
		dedupMem = mib(st.Memory["dedup"])
	}
	fmt.Fprintf(tw, "memory\tstreams %s, items %s, frontier %s, dedup %s\n", mib(st.Memory["streams"]),
		mib(st.Memory["items"]), mib(st.Memory["frontier"]), dedupMem)
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
	if types := handlers.FieldsOf(st.Stats); len(types) > 0 {
		fmt.Fprintln(tw, "\nITEM TYPE\tPAGES\tFIELD\tPAGES WITH A VALUE")
		for _, t := range types {
			for _, f := range t.Fields {
				fmt.Fprintf(tw, "%s\t%d\t%s\t%d%s\n", t.Type, t.Pages, f.Field, f.Pages, noneMatched(f))
			}
		}
	}
	if len(st.Render) > 0 {
		fmt.Fprintln(tw, "\nPAGE TYPE (render: auto)\tMODE\tSAMPLES\tSAME\tCHECKS\tDIVERGED")
		for _, r := range st.Render {
			mode := r.Mode
			if mode == "" {
				mode = "learning"
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\n", r.PageType, mode, r.Samples, r.Same, r.Checks, r.Diverged)
		}
	}
	printBudget(tw, st)
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

// printBudget shows the requests dropped over the crawl's budget and the hosts (or
// domains) that used the most of it; nothing for a crawl without one.
func printBudget(w io.Writer, st *inspect.Status) {
	if len(st.Budget) == 0 && st.Counts["dropped_budget"] == 0 {
		return
	}
	fmt.Fprintf(w, "\nBUDGET (dropped_budget %d)\tPAGES\tBYTES\n", st.Counts["dropped_budget"])
	for _, u := range st.Budget {
		fmt.Fprintf(w, "%s\t%d\t%d\n", u.Key, u.Pages, u.Bytes)
	}
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
