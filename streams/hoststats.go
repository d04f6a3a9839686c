package streams

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"
	"github.com/streamcrawl/streamcrawl/streams/loop"
)

// Per-host fetch figures, bounded: each fetch process counts the hosts it fetches in
// memory for the current window (at most hostStatsMax hosts a window), and every
// hostStatsFlush writes what it counted since of the hosts it finds slowest and failing
// most in the window (hostStatsTop of each) into the window's hash in each host's
// partition (Keys.hostStatsWindow), which expires hostStatsKeep windows later. So the
// figures cost Redis a few commands a process every few seconds whatever the number of
// hosts, and nothing stays of a host that stopped being slow or failing.
const (
	// hostStatsWindow is the length of a window of per-host figures.
	hostStatsWindow = time.Minute
	// hostStatsKeep is how many windows a window's hash outlives.
	hostStatsKeep = 10
	// hostStatsTop is how many hosts of each kind a process writes per window.
	hostStatsTop = 20
	// hostStatsMax bounds the hosts a process counts per window.
	hostStatsMax = 10_000
	// hostStatsFlush is how often a process writes.
	hostStatsFlush = 10 * time.Second
)

// HostStats counts a fetch process's per-host figures, per window of a minute, and writes
// the slowest and failing hosts' to the crawl's layout until Close. Safe for concurrent
// use.
type HostStats struct {
	rdb    redis.UniversalClient
	layout Layout
	now    func() time.Time

	mu      sync.Mutex
	window  int64
	hosts   map[string]*hostFigures
	dropped int64 // hosts not counted this window (over hostStatsMax)

	cancel context.CancelFunc
	done   chan struct{}
}

// hostFigures is one host's figures in the current window, and what of them was written.
type hostFigures struct {
	n, ms, err    int64
	wn, wms, werr int64
}

// hostStatsWriteTimeout bounds one write of the figures (and the last one, at a Close
// whose context has no deadline).
const hostStatsWriteTimeout = 5 * time.Second

// NewHostStats returns per-host figures for the crawl of layout, written every few
// seconds until Close. ctx's values go with every write; its end does not stop the
// writes (Close does).
func NewHostStats(ctx context.Context, rdb redis.UniversalClient, layout Layout) *HostStats {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	h := &HostStats{rdb: rdb, layout: layout, now: time.Now, hosts: map[string]*hostFigures{}, cancel: cancel, done: make(chan struct{})}
	h.window = h.windowOf(h.now())
	go func() {
		defer close(h.done)
		_ = loop.Every(ctx, hostStatsFlush, loop.Config{}, func(ctx context.Context) error {
			wctx, cancel := context.WithTimeout(ctx, hostStatsWriteTimeout)
			defer cancel()
			_ = h.flush(wctx, false) // best effort: figures for people
			return nil
		})
	}()
	return h
}

// windowOf is the number of the window holding t.
func (h *HostStats) windowOf(t time.Time) int64 { return t.Unix() / int64(hostStatsWindow/time.Second) }

// Add counts one request to host (its key, spiders.HostKey) that took took and failed
// or not (a network error or a 5xx).
func (h *HostStats) Add(host string, took time.Duration, failed bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f := h.hosts[host]
	if f == nil {
		if len(h.hosts) >= hostStatsMax {
			h.dropped++
			return
		}
		f = &hostFigures{}
		h.hosts[host] = f
	}
	f.n++
	f.ms += took.Milliseconds()
	if failed {
		f.err++
	}
}

// flush writes what was counted since the last flush of the window's slowest and
// failing hosts; a window that ended (or last, at Close) is written one last time and
// forgotten. The figures it could not write are lost (it returns the error).
func (h *HostStats) flush(ctx context.Context, last bool) error {
	h.mu.Lock()
	window := h.window
	ended := last || h.windowOf(h.now()) != window
	top := topHosts(h.hosts)
	type write struct {
		host         string
		dn, dms, der int64
	}
	var writes []write
	for _, host := range top {
		f := h.hosts[host]
		if w := (write{host, f.n - f.wn, f.ms - f.wms, f.err - f.werr}); w.dn != 0 || w.der != 0 {
			writes = append(writes, w)
			f.wn, f.wms, f.werr = f.n, f.ms, f.err
		}
	}
	if ended {
		h.hosts, h.dropped, h.window = map[string]*hostFigures{}, 0, h.windowOf(h.now())
	}
	h.mu.Unlock()
	if len(writes) == 0 {
		return nil
	}
	keys := map[string]bool{}
	_, err := h.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, w := range writes {
			key := h.layout.ForHost(w.host).hostStatsWindow(window)
			keys[key] = true
			p.HIncrBy(ctx, key, w.host+"|n", w.dn)
			p.HIncrBy(ctx, key, w.host+"|ms", w.dms)
			if w.der != 0 {
				p.HIncrBy(ctx, key, w.host+"|err", w.der)
			}
		}
		for key := range keys {
			p.Expire(ctx, key, (hostStatsKeep+1)*hostStatsWindow)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("streams: host stats: %w", err)
	}
	return nil
}

// topHosts returns the hosts among figs that are slowest (mean time, 3 requests or
// more) or failing most, hostStatsTop of each.
func topHosts(figs map[string]*hostFigures) []string {
	all := make([]string, 0, len(figs))
	for host := range figs {
		all = append(all, host)
	}
	pick := map[string]bool{}
	slow := func(i, j int) bool {
		a, b := figs[all[i]], figs[all[j]]
		return a.ms*b.n > b.ms*a.n // mean a > mean b
	}
	sort.Slice(all, slow)
	n := 0
	for _, host := range all {
		if figs[host].n >= 3 && n < hostStatsTop {
			pick[host] = true
			n++
		}
	}
	sort.Slice(all, func(i, j int) bool { return figs[all[i]].err > figs[all[j]].err })
	for i, host := range all {
		if i >= hostStatsTop || figs[host].err == 0 {
			break
		}
		pick[host] = true
	}
	out := make([]string, 0, len(pick))
	for host := range pick {
		out = append(out, host)
	}
	sort.Strings(out)
	return out
}

// Close stops the periodic writes and writes what is left, under ctx's values and
// deadline (5s when it has none; it runs even when ctx was cancelled). It returns the
// last write's error: those figures are lost.
func (h *HostStats) Close(ctx context.Context) error {
	h.cancel()
	<-h.done
	ctx, cancel := rkit.Cleanup(ctx, hostStatsWriteTimeout)
	defer cancel()
	return h.flush(ctx, true)
}

// HostFigures are one host's fetch figures over some windows.
type HostFigures struct {
	// Requests, their total time in milliseconds, and failures.
	Requests, MS, Failures int64
}

// ReadHostStats returns the per-host figures of the last windows windows of a minute (the current
// one included) of every partition of l: windows × partitions HGETALLs, each of at most
// a few dozen hosts per fetch process.
func ReadHostStats(ctx context.Context, rdb redis.UniversalClient, l Layout, windows int) (map[string]*HostFigures, error) {
	now := time.Now().Unix() / int64(hostStatsWindow/time.Second)
	var cmds []*redis.MapStringStringCmd
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range l.Parts {
			for w := now - int64(windows) + 1; w <= now; w++ {
				cmds = append(cmds, p.HGetAll(ctx, k.hostStatsWindow(w)))
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := map[string]*HostFigures{}
	for _, c := range cmds {
		for field, v := range c.Val() {
			i := len(field) - 1
			for i >= 0 && field[i] != '|' {
				i--
			}
			if i < 0 {
				continue
			}
			host, what := field[:i], field[i+1:]
			x, _ := strconv.ParseInt(v, 10, 64)
			f := out[host]
			if f == nil {
				f = &HostFigures{}
				out[host] = f
			}
			switch what {
			case "n":
				f.Requests += x
			case "ms":
				f.MS += x
			case "err":
				f.Failures += x
			}
		}
	}
	return out, nil
}
