package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// A scheduled crawl runs at the ticks of its schedule. Every worker looks at the
// registry's scheduled crawls as it reads it; for a tick that came, one of them (the
// one whose StartRun succeeds, a script: once per tick however many ask) moves the
// crawl to resetting, keeps the last run's figures in the crawl's run history, deletes
// the crawl's keys (a run starts afresh: its URLs unseen) and queues it; the workers
// then serve it as any queued crawl, and when the run is done the crawl goes back to
// scheduled. A tick that comes while a run is still going starts nothing: the ticks
// counted are those after the crawl last changed state (a run that ended, a submit).

// runsKeep is how many past runs a crawl's run history keeps.
const runsKeep = 100

// resettingStale is how long a crawl may stay resetting before another worker takes
// the reset over (the one that began it died).
const resettingStale = 20 * time.Second

// runsKey is the LIST of a crawl's past runs, newest first (JSON, see RunRecord).
func runsKey(name string) string { return "sc:{fleet}:runs:" + name }

// RunRecord is one past run of a scheduled crawl, as its history keeps it.
type RunRecord struct {
	Run     int64            `json:"run"`
	EndedAt time.Time        `json:"ended_at"`
	State   State            `json:"state"`
	Error   string           `json:"error,omitempty"`
	Items   int64            `json:"items_stored"`
	Dead    int64            `json:"dead_letters"`
	Stats   map[string]int64 `json:"stats,omitempty"`
}

// StartRun starts the run of scheduled crawl name for tick: it reports whether this
// call did (the crawl is then resetting, for the caller to reset and queue), false when
// another did, the tick's run was started already, or a run is still going.
func (r *Registry) StartRun(ctx context.Context, name string, tick time.Time) (bool, error) {
	n, err := startRunScript.Run(ctx, r.rdb, []string{genKey, crawlKey(name)}, tick.UnixMilli(), r.now().UnixMilli()).Int()
	if err != nil {
		return false, fmt.Errorf("fleet: start a run of %s: %w", name, err)
	}
	return n == 1, nil
}

// Runs returns the past runs of crawl name, newest first.
func (r *Registry) Runs(ctx context.Context, name string) ([]RunRecord, error) {
	raw, err := r.rdb.LRange(ctx, runsKey(name), 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("fleet: runs of %s: %w", name, err)
	}
	out := make([]RunRecord, 0, len(raw))
	for _, s := range raw {
		var rec RunRecord
		if json.Unmarshal([]byte(s), &rec) == nil {
			out = append(out, rec)
		}
	}
	return out, nil
}

// keepRun adds rec to the crawl's run history.
func (r *Registry) keepRun(ctx context.Context, name string, rec RunRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	_, err = r.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.LPush(ctx, runsKey(name), b)
		p.LTrim(ctx, runsKey(name), 0, runsKeep-1)
		return nil
	})
	return err
}

// schedule starts the runs of scheduled crawls whose tick came, and finishes resets
// that a dead worker left half done.
func (w *worker) schedule(ctx context.Context, crawls []Crawl) {
	now := time.Now()
	for _, c := range crawls {
		if c.Schedule == "" {
			continue
		}
		switch c.State {
		case Resetting:
			if now.Sub(c.ChangedAt) > resettingStale {
				w.log.Warn("fleet: finishing a scheduled crawl's reset another worker left", zap.String("crawl", c.Name))
				w.reset(ctx, c)
			}
		case Scheduled, Done, Failed:
			s, err := ParseSchedule(c.Schedule)
			if err != nil {
				continue // refused at submit; a registry written by hand
			}
			after := c.ChangedAt
			if last := time.UnixMilli(c.LastTick); last.After(after) {
				after = last
			}
			tick := LatestTick(s, after, now)
			if tick.IsZero() {
				continue
			}
			if ok, err := w.reg.StartRun(ctx, c.Name, tick); err != nil {
				w.log.Warn("fleet: cannot start a scheduled run", zap.String("crawl", c.Name), zap.Error(err))
			} else if ok {
				w.log.Info("fleet: starting a scheduled run", zap.String("crawl", c.Name), zap.Time("tick", tick))
				w.reset(ctx, c)
			}
		}
	}
}

// reset keeps the last run's figures, deletes the crawl's keys and queues it. A crawl
// whose keys cannot be deleted yet (a consumer of the last run still counts as alive)
// stays resetting; the reset is taken over later.
func (w *worker) reset(ctx context.Context, c Crawl) {
	log := w.log.With(zap.String("crawl", c.Name))
	l, err := streams.ReadLayout(ctx, w.o.Client.UniversalClient, c.Name)
	if err != nil {
		log.Warn("fleet: cannot read the crawl's layout to reset it", zap.Error(err))
		return
	}
	if c.Runs > 0 {
		rec := RunRecord{Run: c.Runs, EndedAt: c.ChangedAt, State: c.State, Error: c.LastError}
		if st, err := inspect.ReadStatus(ctx, w.o.Client.UniversalClient, l); err == nil {
			rec.Items, rec.Dead, rec.Stats = st.ItemsStored, st.DeadLetters, st.Stats
		}
		if err := w.reg.keepRun(ctx, c.Name, rec); err != nil {
			log.Warn("fleet: cannot keep the last run's figures", zap.Error(err))
		}
	}
	if _, err := inspect.Reset(ctx, w.o.Client.UniversalClient, l); err != nil {
		log.Warn("fleet: cannot reset the crawl for its scheduled run; trying again later", zap.Error(err))
		return
	}
	if _, err := w.reg.Transition(ctx, c.Name, []State{Resetting}, Queued, ""); err != nil {
		log.Warn("fleet: cannot queue the scheduled run", zap.Error(err))
	}
}
