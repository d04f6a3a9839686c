package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders/demosite"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// chaosReport is the outcome of a chaos run, checked against the site's ground truth.
type chaosReport struct {
	Pages           int             // reachable pages of the site
	Kills, Restarts int             // workers killed with SIGKILL, and restarted
	LostPages       int             // reachable pages never fetched
	LostItems       int             // products with no item in any file
	WrongItems      int             // items whose fields differ from the ground truth
	CorruptLines    int             // lines of the item files that are not items
	DupFetches      int             // extra fetches of pages (retries of 500 pages excluded)
	DupItems        int             // extra lines with a key already written
	Items           int             // item lines in all files
	Pending         int64           // entries pending in any stage at the end
	Done            bool            // the crawl's own verdict
	Redelivery      []time.Duration // kill -> the killed consumer's entries taken over
	Took            time.Duration
	MissingExamples []string
}

// ok reports the guarantees: nothing lost, nothing corrupt, nothing pending, done.
func (c *chaosReport) ok() bool {
	return c.LostPages == 0 && c.LostItems == 0 && c.WrongItems == 0 && c.CorruptLines == 0 && c.Pending == 0 && c.Done
}

// check compares what the crawl did with the site's ground truth.
func (r *chaosRun) check(ctx context.Context, site *demosite.Site, base string) error {
	rep := &r.report
	counts := site.Requests()
	reach := site.Reachable(true) // the demo spider obeys robots.txt
	rep.Pages = len(reach)
	for _, pq := range reach {
		n := counts[pq]
		switch {
		case n == 0:
			rep.LostPages++
			if len(rep.MissingExamples) < 5 {
				rep.MissingExamples = append(rep.MissingExamples, pq)
			}
		case site.KindOf(pq) == demosite.ServerError:
			// retried by design
		case n > 1:
			rep.DupFetches += n - 1
		}
	}
	want := map[string]map[string]string{}
	for _, it := range site.ExpectedItems(base) {
		want[it["url"]] = it
	}
	got := map[string]bool{}
	for _, path := range r.slotFiles() {
		if err := readItemFile(path, func(rec map[string]any, ok bool) {
			if !ok {
				rep.CorruptLines++
				return
			}
			rep.Items++
			url, _ := rec["url"].(string)
			if got[url] {
				rep.DupItems++
				return
			}
			got[url] = true
			w, known := want[url]
			if !known {
				rep.WrongItems++
				return
			}
			for k, v := range w {
				if rec[k] != v {
					rep.WrongItems++
					return
				}
			}
		}); err != nil {
			return err
		}
	}
	for url := range want {
		if !got[url] {
			rep.LostItems++
		}
	}
	p, err := inspect.ReadProgress(ctx, r.rdb, streams.NewLayout(r.keys.Crawl, 1)) // the chaos spider has one partition
	if err != nil {
		return err
	}
	rep.Done = p.Done()
	for _, s := range p.Stages {
		rep.Pending += s.Pending
	}
	return nil
}

// readItemFile calls fn for each line of an items JSONL file; ok is false for a line
// that is not a JSON object with a _key (a corrupt line).
func readItemFile(path string, fn func(rec map[string]any, ok bool)) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil || rec["_key"] == nil {
			fn(nil, false)
			continue
		}
		fn(rec, true)
	}
	return sc.Err()
}

// print writes the chaos table.
func (c *chaosReport) print(w io.Writer, opt chaosOptions) {
	sort.Slice(c.Redelivery, func(i, j int) bool { return c.Redelivery[i] < c.Redelivery[j] })
	red := "-"
	if n := len(c.Redelivery); n > 0 {
		red = fmt.Sprintf("median %s, max %s (%d kills holding entries; bound min-idle+claim-interval+1s = %s)",
			c.Redelivery[n/2].Round(10*time.Millisecond), c.Redelivery[n-1].Round(10*time.Millisecond), n,
			opt.MinIdle+opt.ClaimInterval+time.Second)
	}
	pct := func(n int) string {
		if c.Pages == 0 {
			return "0"
		}
		return fmt.Sprintf("%d (%.2f%%)", n, 100*float64(n)/float64(c.Pages))
	}
	fmt.Fprintf(w, "| pages | procs/stage | kills | restarts | lost pages | lost items | corrupt lines | duplicate fetches | duplicate items | wall time |\n")
	fmt.Fprintf(w, "|---|---|---|---|---|---|---|---|---|---|\n")
	fmt.Fprintf(w, "| %d | %d | %d | %d | %d | %d | %d | %s | %s | %s |\n", c.Pages, opt.Procs, c.Kills, c.Restarts,
		c.LostPages, c.LostItems, c.CorruptLines, pct(c.DupFetches), pct(c.DupItems), c.Took.Round(100*time.Millisecond))
	fmt.Fprintf(w, "kill to redelivery: %s\n", red)
	fmt.Fprintf(w, "items %d, wrong items %d, pending at end %d, done %v\n", c.Items, c.WrongItems, c.Pending, c.Done)
	if len(c.MissingExamples) > 0 {
		fmt.Fprintf(w, "never fetched, e.g.: %v\n", c.MissingExamples)
	}
}
