package dashboard

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/handlers/metrics"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
	"github.com/streamcrawl/streamcrawl/streams/loop"
)

// rateWindow is the span rates are computed over.
const rateWindow = 10 * time.Second

// hostsEvery is how often the per-host figures are read: a broad crawl's hash holds
// three fields per host, too many to read every second.
const hostsEvery = 10 * time.Second

// Sample is one look at the crawl, as the page charts it.
type Sample struct {
	At        int64            `json:"at"` // Unix milliseconds
	Pages     int64            `json:"pages"`
	Items     int64            `json:"items"`
	PagesRate float64          `json:"pages_rate"` // per second over the last 10 s
	ItemsRate float64          `json:"items_rate"`
	Frontier  int64            `json:"frontier"`
	Delayed   int64            `json:"delayed"`
	Dead      int64            `json:"dead"`
	Seen      int64            `json:"seen"`
	Pending   map[string]int64 `json:"pending"`   // by stage
	Unread    map[string]int64 `json:"unread"`    // by stage; -1 when Redis cannot tell
	Consumers map[string]int64 `json:"consumers"` // by stage: registered in the group
	Alive     map[string]int64 `json:"alive"`     // by stage: of those, read within Config.AliveIdle
	RedisUsed int64            `json:"redis_used"`
	RedisMax  int64            `json:"redis_max"`
	Done      bool             `json:"done"`
}

// Host is one host's fetch figures over the crawl.
type Host struct {
	Host     string  `json:"host"`
	Requests int64   `json:"requests"`
	Failures int64   `json:"failures"`
	AvgMS    float64 `json:"avg_ms"`
}

// sampler reads the crawl's figures every interval and keeps the last ones.
type sampler struct {
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
}

// run samples at once and then every interval until ctx ends, then returns nil.
func (s *sampler) run(ctx context.Context, every time.Duration) error {
	return loop.Every(ctx, every, loop.Config{Now: true}, func(ctx context.Context) error {
		s.sample(ctx) // keeps its own last error for the page
		return nil
	})
}

func (s *sampler) sample(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var smp Sample
	var slow, failing []Host
	l, err := streams.ReadLayout(ctx, s.rdb, s.crawl)
	if err == nil {
		smp, err = readSample(ctx, s.rdb, l, s.alive)
	}
	s.mu.Lock()
	// Every sample for the first 30, so that a new page fills in at once.
	readHostsNow := time.Since(s.hostsAt) >= hostsEvery || len(s.history) < 30
	s.mu.Unlock()
	if err == nil && readHostsNow {
		slow, failing, err = readHosts(ctx, s.rdb, l, 10)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.lastErr = err.Error()
		return
	}
	s.lastErr = ""
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

// snapshot returns the history and hosts.
func (s *sampler) snapshot() (history []Sample, slow, failing []Host, lastErr string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Sample(nil), s.history...), s.slowest, s.failing, s.lastErr
}

// readSample reads one sample of the crawl.
func readSample(ctx context.Context, rdb redis.UniversalClient, l streams.Layout, alive time.Duration) (Sample, error) {
	st, err := inspect.ReadStatus(ctx, rdb, l)
	if err != nil {
		return Sample{}, err
	}
	f, err := metrics.ReadFrontier(ctx, rdb, l)
	if err != nil {
		return Sample{}, err
	}
	smp := Sample{At: time.Now().UnixMilli(), Pages: st.Stats["pages_fetched"], Items: st.ItemsStored,
		Frontier: f.Requests, Delayed: f.Delayed, Dead: st.DeadLetters, Seen: st.Seen, Done: st.Done,
		Pending: map[string]int64{}, Unread: map[string]int64{}, Consumers: map[string]int64{}, Alive: map[string]int64{}}
	for _, s := range st.Streams {
		kind := s.Name[strings.LastIndexByte(s.Name, ':')+1:]
		for _, g := range s.Groups {
			if stage := stageOf(kind); stage == g.Name {
				smp.Pending[stage] += g.Pending
				smp.Unread[stage] += g.Lag
			}
		}
	}
	if err := readConsumers(ctx, rdb, l, alive, &smp); err != nil {
		return Sample{}, err
	}
	smp.RedisUsed, smp.RedisMax, _ = metrics.RedisMemory(ctx, rdb)
	return smp, nil
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

// readHosts returns the n slowest hosts (by mean time, with at least 3 requests) and
// the n with the most failures, from the crawl's per-host figures.
func readHosts(ctx context.Context, rdb redis.UniversalClient, l streams.Layout, n int) (slow, failing []Host, err error) {
	raw, err := rdb.HGetAll(ctx, l.Global.HostStats).Result()
	if err != nil {
		return nil, nil, err
	}
	hosts := map[string]*Host{}
	ms := map[string]int64{}
	for field, v := range raw {
		host, what, ok := strings.Cut(field, "|")
		if !ok {
			continue
		}
		x, _ := strconv.ParseInt(v, 10, 64)
		h := hosts[host]
		if h == nil {
			h = &Host{Host: host}
			hosts[host] = h
		}
		switch what {
		case "n":
			h.Requests = x
		case "err":
			h.Failures = x
		case "ms":
			ms[host] = x
		}
	}
	var all []Host
	for host, h := range hosts {
		if h.Requests > 0 {
			h.AvgMS = float64(ms[host]) / float64(h.Requests)
		}
		all = append(all, *h)
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
