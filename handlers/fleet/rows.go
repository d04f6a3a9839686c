package fleet

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// Row is one registered crawl with the figures of its keys, as `streamcrawl crawls` and
// the dashboard's fleet page show it (all 0 for a crawl no worker has served yet).
type Row struct {
	Crawl
	// Continuous is the crawl's continuous mode (Crawl.Mode), in place of the registry's
	// number.
	Continuous inspect.Continuous `json:"continuous"`
	// PagesPerSec is the pages fetched per second over the span ReadRows was given (0
	// without one).
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

// ReadRows reads every registered crawl and its figures from the counters the crawl
// keeps (inspect.ReadStatus: the same cost for a crawl of any size). Redis keeps no
// rate, so with rateSpan > 0 it reads each crawl's pages counter twice, rateSpan apart
// (the status reads in between), for PagesPerSec; with 0 it reads once and leaves the
// rate to a caller that keeps its own samples (the dashboard).
func ReadRows(ctx context.Context, rdb redis.UniversalClient, rateSpan time.Duration) ([]Row, error) {
	list, err := New(rdb).List(ctx)
	if err != nil || len(list) == 0 {
		return nil, err
	}
	rows := make([]Row, len(list))
	for i, c := range list {
		rows[i] = Row{Crawl: c, Continuous: c.Mode()}
		// Only a crawl with keys has a status: reading one without would be all zeros,
		// and a partitioned crawl's layout is in its meta hash.
		n, err := rdb.Exists(ctx, streams.NewKeys(c.Name).Meta).Result()
		if err != nil {
			return nil, fmt.Errorf("fleet: crawl %s: %w", c.Name, err)
		}
		if rows[i].hasKeys = n == 1; rows[i].hasKeys {
			if rows[i].layout, err = streams.ReadLayout(ctx, rdb, c.Name); err != nil {
				return nil, err
			}
		}
	}
	var before []int64
	var t0 time.Time
	if rateSpan > 0 {
		if before, t0, err = readPages(ctx, rdb, rows); err != nil {
			return nil, err
		}
	}
	for i := range rows {
		r := &rows[i]
		if !r.hasKeys {
			continue
		}
		st, err := inspect.ReadStatus(ctx, rdb, r.layout)
		if err != nil {
			return nil, fmt.Errorf("fleet: crawl %s: %w", r.Name, err)
		}
		r.PagesFetched, r.Items, r.DeadLetters = st.Stats["pages_fetched"], st.ItemsStored, st.DeadLetters
		r.Waiting = st.Frontier + st.Queued + st.Delayed
	}
	if before == nil {
		return rows, nil // no rate asked, or no crawl has keys: nothing to rate
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
func readPages(ctx context.Context, rdb redis.UniversalClient, rows []Row) ([]int64, time.Time, error) {
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
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, at, fmt.Errorf("fleet: pages fetched: %w", err)
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
