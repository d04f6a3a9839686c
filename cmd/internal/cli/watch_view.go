package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/handlers/metrics"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// rateWindow is the span the live views compute rates over.
const rateWindow = 10 * time.Second

// aliveIdle is how long a consumer may go without reading and still count as alive
// (stage readers block at most 2 s per read).
const aliveIdle = 15 * time.Second

// sample is one look at a crawl's counters.
type sample struct {
	at                  time.Time
	pages, items, links int64
}

// rates keeps the samples of the last rateWindow and gives per-second rates over them.
type rates struct{ samples []sample }

func (r *rates) add(s sample) {
	r.samples = append(r.samples, s)
	for len(r.samples) > 2 && s.at.Sub(r.samples[1].at) >= rateWindow {
		r.samples = r.samples[1:]
	}
}

// perSecond returns the rates of pages, items and queued requests over the window.
func (r *rates) perSecond() (pages, items, links float64) {
	if len(r.samples) < 2 {
		return 0, 0, 0
	}
	a, b := r.samples[0], r.samples[len(r.samples)-1]
	d := b.at.Sub(a.at).Seconds()
	if d <= 0 {
		return 0, 0, 0
	}
	return float64(b.pages-a.pages) / d, float64(b.items-a.items) / d, float64(b.links-a.links) / d
}

// stageView is one stage's consumers and backlog, summed over partitions.
type stageView struct {
	stage            string
	consumers, alive int64
	pending, lag     int64
	lagKnown         bool
}

// watchView is what `status --watch` shows at one refresh.
type watchView struct {
	st        *inspect.Status
	stages    []stageView
	usedMem   int64
	maxMem    int64
	at        time.Time
	pagesRate float64
	itemsRate float64
	linksRate float64
}

// readWatchView reads one refresh of the live view and adds its sample to r.
func readWatchView(ctx context.Context, rdb redis.UniversalClient, l streams.Layout, r *rates) (*watchView, error) {
	st, err := inspect.ReadStatus(ctx, rdb, l)
	if err != nil {
		return nil, err
	}
	v := &watchView{st: st, at: time.Now()}
	v.usedMem, v.maxMem, _ = metrics.RedisMemory(ctx, rdb) // a view without memory beats none
	for _, stage := range []string{streams.StageFetch, streams.StageParse, streams.StageStore} {
		sv := stageView{stage: stage, lagKnown: true}
		for _, k := range l.Parts {
			stream := k.Input(stage)
			gs, err := inspect.ReadGroupState(ctx, rdb, stream, stage)
			if err != nil {
				return nil, err
			}
			if !gs.Exists {
				continue
			}
			cs, err := rdb.XInfoConsumers(ctx, stream, stage).Result()
			if err != nil {
				return nil, fmt.Errorf("consumers of %s: %w", stream, err)
			}
			for _, c := range cs {
				sv.consumers++
				if c.Idle < aliveIdle {
					sv.alive++
				}
			}
		}
		for _, s := range st.Streams {
			for _, g := range s.Groups {
				if g.Name == stage && s.Name[strings.LastIndexByte(s.Name, ':')+1:] == inputKind(stage) {
					sv.pending += g.Pending
					if g.Lag < 0 {
						sv.lagKnown = false
					}
					sv.lag += g.Lag
				}
			}
		}
		v.stages = append(v.stages, sv)
	}
	r.add(sample{at: v.at, pages: st.Stats["pages_fetched"], items: st.ItemsStored, links: st.Stats["requests_queued"]})
	v.pagesRate, v.itemsRate, v.linksRate = r.perSecond()
	return v, nil
}

// inputKind is the last part of the key of a stage's input stream.
func inputKind(stage string) string {
	switch stage {
	case streams.StageFetch:
		return "requests"
	case streams.StageParse:
		return "responses"
	}
	return "items"
}

// eta estimates how long the known work takes at the current page rate: requests in
// the frontier, delayed, and in the fetch stage. Links found meanwhile add to it.
func (v *watchView) eta() (time.Duration, bool) {
	if v.st.Done || v.pagesRate <= 0 {
		return 0, false
	}
	left := v.st.Frontier + v.st.Delayed
	for _, s := range v.stages {
		if s.stage == streams.StageFetch {
			left += s.pending + max(s.lag, 0)
		}
	}
	return time.Duration(float64(left) / v.pagesRate * float64(time.Second)).Round(time.Second), true
}

// print writes the view as a screen.
func (v *watchView) print(w io.Writer, every time.Duration) {
	st := v.st
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "crawl %s\tdone=%v\t%s, every %s (Ctrl-C to stop)\n", st.Crawl, st.Done, v.at.Format("15:04:05"), every)
	fmt.Fprintf(tw, "rates (last %s)\tpages %.1f/s\titems %.1f/s\tnew requests %.1f/s\n", rateWindow, v.pagesRate, v.itemsRate, v.linksRate)
	fmt.Fprintf(tw, "totals\tpages %d\titems %d\tseen %d\n", st.Stats["pages_fetched"], st.ItemsStored, st.Seen)
	eta := "-"
	if d, ok := v.eta(); ok {
		eta = d.String() + " for the known requests"
	}
	fmt.Fprintf(tw, "frontier\t%d waiting\t%d delayed\tETA %s\n", st.Frontier, st.Delayed, eta)
	if r := st.Revisits; r.Scheduled > 0 || st.Continuous.On {
		fmt.Fprintf(tw, "revisits\t%d scheduled\t%d due now (%d overdue)\t%d next hour\n", r.Scheduled, r.DueNow, r.Overdue, r.NextHour)
	}
	fmt.Fprintf(tw, "dead letters\t%d\t\t\n", st.DeadLetters)
	limit := "no maxmemory"
	if v.maxMem > 0 {
		limit = fmt.Sprintf("of %s (%.0f%%)", mib(v.maxMem), 100*float64(v.usedMem)/float64(v.maxMem))
	}
	fmt.Fprintf(tw, "redis memory\t%s\t%s\t\n", mib(v.usedMem), limit)
	fmt.Fprintln(tw, "\nSTAGE\tCONSUMERS ALIVE\tPENDING\tUNREAD")
	for _, s := range v.stages {
		lag := fmt.Sprint(s.lag)
		if !s.lagKnown {
			lag = "?"
		}
		fmt.Fprintf(tw, "%s\t%d of %d\t%d\t%s\n", s.stage, s.alive, s.consumers, s.pending, lag)
	}
	_ = tw.Flush()
}

// line is the view as one plain line, for output that is not a terminal.
func (v *watchView) line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s crawl=%s done=%v pages=%d (%.1f/s) items=%d (%.1f/s) frontier=%d delayed=%d dead=%d redis=%s",
		v.at.Format("15:04:05"), v.st.Crawl, v.st.Done, v.st.Stats["pages_fetched"], v.pagesRate, v.st.ItemsStored, v.itemsRate,
		v.st.Frontier, v.st.Delayed, v.st.DeadLetters, mib(v.usedMem))
	if r := v.st.Revisits; r.Scheduled > 0 || v.st.Continuous.On {
		fmt.Fprintf(&b, " revisits=%d (due %d, overdue %d, next hour %d)", r.Scheduled, r.DueNow, r.Overdue, r.NextHour)
	}
	for _, s := range v.stages {
		fmt.Fprintf(&b, " %s=%d/%d alive,%d pending", s.stage, s.alive, s.consumers, s.pending)
	}
	if d, ok := v.eta(); ok {
		fmt.Fprintf(&b, " eta=%s", d)
	}
	return b.String()
}
