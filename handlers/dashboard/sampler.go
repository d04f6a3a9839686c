package dashboard

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/handlers/metrics"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/loop"
)

// rateWindow is the span rates are computed over.
const rateWindow = 10 * time.Second

// hostsEvery is how often the per-host figures are read (they are written every few
// seconds).
const hostsEvery = 10 * time.Second

// Sample is one look at the crawl, as the page charts it.
type Sample struct {
	At        int64            `json:"at"`         // Unix milliseconds
	Pages     int64            `json:"pages"`      // pages fetched so far
	Items     int64            `json:"items"`      // items stored so far
	PagesRate float64          `json:"pages_rate"` // pages per second over the last 10 s
	ItemsRate float64          `json:"items_rate"` // items per second over the last 10 s
	Frontier  int64            `json:"frontier"`   // requests waiting in the frontier
	Delayed   int64            `json:"delayed"`    // retries waiting for their time
	Dead      int64            `json:"dead"`       // entries in the dead-letter stream
	Seen      int64            `json:"seen"`       // URLs recorded in the dedup
	Pending   map[string]int64 `json:"pending"`    // by stage
	Unread    map[string]int64 `json:"unread"`     // by stage; -1 when Redis cannot tell
	Consumers map[string]int64 `json:"consumers"`  // by stage: registered in the group
	Alive     map[string]int64 `json:"alive"`      // by stage: of those, read within Config.AliveIdle
	RedisUsed int64            `json:"redis_used"` // the server's used_memory, bytes
	RedisMax  int64            `json:"redis_max"`  // its maxmemory, bytes (0: none)
	Done      bool             `json:"done"`       // the crawl is done (see streamcrawl status)
	// Continuous: the crawl runs in continuous mode (it waits for revisits when its
	// queues are empty instead of ending).
	Continuous bool `json:"continuous"`
	// Revisits is the number of revisits in the schedule, RevisitsDue those due now
	// (not yet released into host queues) and RevisitsNextHour those due within the hour.
	Revisits         int64 `json:"revisits"`
	RevisitsDue      int64 `json:"revisits_due"`
	RevisitsNextHour int64 `json:"revisits_next_hour"`
}

// Host is one host's fetch figures over the crawl.
type Host struct {
	Host     string  `json:"host"`     // the host's key
	Requests int64   `json:"requests"` // requests made to it in the figures' windows
	Failures int64   `json:"failures"` // of those, failed (network errors, 5xx)
	AvgMS    float64 `json:"avg_ms"`   // their mean duration, ms
}

// sampler keeps the crawl's recent samples for the page, taken through the process's
// metrics.Sampler (shared with /metrics) every interval while the page is being read:
// nobody looking costs Redis nothing.
type sampler struct {
	src     *metrics.Sampler
	rdb     redis.UniversalClient
	crawl   string
	keep    int
	alive   time.Duration // a consumer idle longer is not counted alive
	mu      sync.Mutex
	history []Sample
	hostsAt time.Time // when the hosts were last read
	slowest []Host
	failing []Host
	lastErr string
	readAt  time.Time // when the page last asked
}

// watched is how long after the page's last question the sampler keeps sampling.
const watched = 5 * time.Second

// run samples every interval while the page is read, until ctx ends, then returns nil.
func (s *sampler) run(ctx context.Context, every time.Duration) error {
	return loop.Every(ctx, every, loop.Config{Now: true}, func(ctx context.Context) error {
		s.tick(ctx)
		return nil
	})
}

// tick samples unless nobody read the page lately (and it has a sample to show).
func (s *sampler) tick(ctx context.Context) {
	s.mu.Lock()
	idle := time.Since(s.readAt) > watched && len(s.history) > 0
	s.mu.Unlock()
	if !idle {
		s.sample(ctx) // keeps its own last error for the page
	}
}

func (s *sampler) sample(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var smp Sample
	var slow, failing []Host
	got, err := s.src.Read(ctx, s.crawl)
	if err == nil {
		smp = sampleOf(got)
		err = readConsumers(ctx, s.rdb, got.Layout, s.alive, &smp)
	}
	s.mu.Lock()
	// Every sample for the first 30, so that a new page fills in at once.
	readHostsNow := time.Since(s.hostsAt) >= hostsEvery || len(s.history) < 30
	s.mu.Unlock()
	if err == nil && readHostsNow {
		slow, failing, err = readHosts(ctx, s.rdb, got.Layout, 10)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.lastErr = err.Error()
		return
	}
	s.lastErr = ""
	if n := len(s.history); n > 0 && s.history[n-1].At == smp.At {
		return // the shared read was not renewed yet
	}
	s.history = append(s.history, smp)
	if len(s.history) > s.keep {
		s.history = s.history[len(s.history)-s.keep:]
	}
	// Rates over the last rateWindow of samples.
	last := &s.history[len(s.history)-1]
	for i := range s.history {
		first := s.history[i]
		if d := float64(last.At-first.At) / 1000; d > 0 && float64(last.At-first.At) <= float64(rateWindow.Milliseconds()) {
			last.PagesRate = float64(last.Pages-first.Pages) / d
			last.ItemsRate = float64(last.Items-first.Items) / d
			break
		}
	}
	if readHostsNow {
		s.slowest, s.failing, s.hostsAt = slow, failing, time.Now()
	}
}

// snapshot returns the history and hosts, and notes that the page is being read.
func (s *sampler) snapshot() (history []Sample, slow, failing []Host, lastErr string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.readAt = time.Now()
	return append([]Sample(nil), s.history...), s.slowest, s.failing, s.lastErr
}

// sampleOf is a sample of the page from the shared one.
func sampleOf(got metrics.Sample) Sample {
	st := got.Status
	f := metrics.FrontierOf(st)
	smp := Sample{At: got.At.UnixMilli(), Pages: st.Stats["pages_fetched"], Items: st.ItemsStored,
		Frontier: f.Requests, Delayed: f.Delayed, Dead: st.DeadLetters, Seen: st.Seen, Done: st.Done,
		Pending: map[string]int64{}, Unread: map[string]int64{}, Consumers: map[string]int64{},
		Alive: map[string]int64{}, RedisUsed: got.RedisUsed, RedisMax: got.RedisMax,
		Continuous: st.Continuous.On, Revisits: st.Revisits.Scheduled, RevisitsDue: st.Revisits.DueNow,
		RevisitsNextHour: st.Revisits.NextHour}
	for _, s := range st.Streams {
		kind := s.Name[strings.LastIndexByte(s.Name, ':')+1:]
		for _, g := range s.Groups {
			if stage := stageOf(kind); stage == g.Name {
				smp.Pending[stage] += g.Pending
				smp.Unread[stage] += g.Lag
			}
		}
	}
	return smp
}

// readConsumers counts each stage's consumers, registered and alive (read within
// alive), over the partitions (a process reads every partition under one name, so the
// most of one partition's is the number of processes).
func readConsumers(ctx context.Context, rdb redis.UniversalClient, l streams.Layout, alive time.Duration, smp *Sample) error {
	for _, stage := range []string{streams.StageFetch, streams.StageParse, streams.StageStore} {
		for _, k := range l.Parts {
			cs, err := rdb.XInfoConsumers(ctx, k.Input(stage), stage).Result()
			if err != nil {
				if strings.Contains(err.Error(), "no such key") || strings.HasPrefix(err.Error(), "NOGROUP") {
					continue // no group yet: no consumer
				}
				return fmt.Errorf("dashboard: consumers of %s: %w", k.Input(stage), err)
			}
			var n int64
			for _, c := range cs {
				if c.Idle < alive {
					n++
				}
			}
			smp.Consumers[stage] = max(smp.Consumers[stage], int64(len(cs)))
			smp.Alive[stage] = max(smp.Alive[stage], n)
		}
	}
	return nil
}

// stageOf names the stage whose input stream is of kind.
func stageOf(kind string) string {
	switch kind {
	case "requests":
		return streams.StageFetch
	case "responses":
		return streams.StageParse
	case "items":
		return streams.StageStore
	}
	return ""
}

// hostWindows is how many windows of per-host figures the page shows (the last five
// minutes).
const hostWindows = 5

// readHosts returns the n slowest hosts (by mean time, with at least 3 requests) and
// the n with the most failures, from the crawl's per-host figures of the last windows.
func readHosts(ctx context.Context, rdb redis.UniversalClient, l streams.Layout, n int) (slow, failing []Host, err error) {
	figs, err := streams.ReadHostStats(ctx, rdb, l, hostWindows)
	if err != nil {
		return nil, nil, err
	}
	var all []Host
	for host, f := range figs {
		h := Host{Host: host, Requests: f.Requests, Failures: f.Failures}
		if f.Requests > 0 {
			h.AvgMS = float64(f.MS) / float64(f.Requests)
		}
		all = append(all, h)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].AvgMS > all[j].AvgMS })
	for _, h := range all {
		if h.Requests >= 3 && len(slow) < n {
			slow = append(slow, h)
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Failures > all[j].Failures })
	for _, h := range all {
		if h.Failures > 0 && len(failing) < n {
			failing = append(failing, h)
		}
	}
	return slow, failing, nil
}
