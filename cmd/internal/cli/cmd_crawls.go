package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/streamcrawl/streamcrawl/handlers/fleet"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// rateSpan is how far apart crawls reads each crawl's pages counter for its pages/s:
// Redis keeps no rate of its own (status --watch and the dashboard keep their samples
// in memory), so a one-off look takes two.
const rateSpan = time.Second

// crawlRow is one crawl as `crawls` shows it: the registry's record and figures of its
// keys (all 0 for a crawl no worker has served yet).
type crawlRow struct {
	fleet.Crawl
	// Continuous is the crawl's continuous mode (fleet.Crawl.Mode), in place of the
	// registry's number.
	Continuous inspect.Continuous `json:"continuous"`
	// PagesPerSec is the pages fetched per second over rateSpan.
	PagesPerSec float64 `json:"pages_per_s"`
	// PagesFetched, Items and DeadLetters are status's pages_fetched, items stored and
	// dead letters.
	PagesFetched int64 `json:"pages_fetched"`
	Items        int64 `json:"items"`
	DeadLetters  int64 `json:"dead_letters"`
	// Waiting is the requests not fetched yet: in the hosts' queues, in the requests
	// stream unread, and delayed for a retry.
	Waiting int64 `json:"waiting"`

	layout  streams.Layout
	hasKeys bool
}

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
			rows, err := readCrawlRows(ctx, rdb)
			if err != nil {
				return err
			}
			if asJSON {
				if rows == nil {
					rows = []crawlRow{} // [] for scripts, not null
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

// readCrawlRows reads every registered crawl and its figures: the pages counter of each
// first, then its status, then the pages counter again rateSpan after the first read.
func readCrawlRows(ctx context.Context, rdb redis.UniversalClient) ([]crawlRow, error) {
	list, err := fleet.New(rdb).List(ctx)
	if err != nil || len(list) == 0 {
		return nil, err
	}
	rows := make([]crawlRow, len(list))
	for i, c := range list {
		rows[i] = crawlRow{Crawl: c, Continuous: c.Mode()}
		// Only a crawl with keys has a status: reading one without would be all zeros,
		// and a partitioned crawl's layout is in its meta hash.
		n, err := rdb.Exists(ctx, streams.NewKeys(c.Name).Meta).Result()
		if err != nil {
			return nil, fmt.Errorf("crawl %s: %w", c.Name, err)
		}
		if rows[i].hasKeys = n == 1; rows[i].hasKeys {
			if rows[i].layout, err = streams.ReadLayout(ctx, rdb, c.Name); err != nil {
				return nil, err
			}
		}
	}
	before, t0, err := readPages(ctx, rdb, rows)
	if err != nil {
		return nil, err
	}
	for i := range rows {
		r := &rows[i]
		if !r.hasKeys {
			continue
		}
		st, err := inspect.ReadStatus(ctx, rdb, r.layout)
		if err != nil {
			return nil, fmt.Errorf("crawl %s: %w", r.Name, err)
		}
		r.PagesFetched, r.Items, r.DeadLetters = st.Stats["pages_fetched"], st.ItemsStored, st.DeadLetters
		r.Waiting = st.Frontier + st.Queued + st.Delayed
	}
	if before == nil {
		return rows, nil // no crawl has keys: nothing to rate
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(time.Until(t0.Add(rateSpan))):
	}
	after, t1, err := readPages(ctx, rdb, rows)
	if err != nil {
		return nil, err
	}
	for i := range rows {
		if d := t1.Sub(t0).Seconds(); rows[i].hasKeys && d > 0 {
			rows[i].PagesPerSec = float64(max(after[i]-before[i], 0)) / d
		}
	}
	return rows, nil
}

// readPages reads the pages_fetched counter of every row with keys in one pipeline and
// returns them (nil when no row has keys) with the time of the read.
func readPages(ctx context.Context, rdb redis.UniversalClient, rows []crawlRow) ([]int64, time.Time, error) {
	cmds := make([]*redis.StringCmd, len(rows))
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, r := range rows {
			if r.hasKeys {
				cmds[i] = p.HGet(ctx, r.layout.Global.Stats, "pages_fetched")
			}
		}
		return nil
	})
	at := time.Now()
	if err != nil && err != redis.Nil {
		return nil, at, fmt.Errorf("pages fetched: %w", err)
	}
	var out []int64
	for i, c := range cmds {
		if c == nil {
			continue
		}
		if out == nil {
			out = make([]int64, len(rows))
		}
		out[i], _ = strconv.ParseInt(c.Val(), 10, 64) // absent: none fetched yet
	}
	return out, at, nil
}

// lastErrorWidth is how much of a crawl's last error the table shows.
const lastErrorWidth = 60

func printCrawls(w io.Writer, rows []crawlRow) {
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
