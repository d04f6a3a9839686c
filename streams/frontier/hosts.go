package frontier

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"

	"github.com/redis/go-redis/v9"
)

// Defaults of HostDefaults.
const (
	// DefaultLeaseTTL is how long a host's slot stays taken when its fetcher died
	// without giving it back.
	DefaultLeaseTTL = 60 * time.Second
	// DefaultHostQuantum is the most requests of one host without limits handed out per
	// turn, so hosts of one band take turns even when one has a huge backlog.
	DefaultHostQuantum = 16
	// MaxHostBackoff bounds how long a host is pushed back after repeated 429/503.
	MaxHostBackoff = 10 * time.Minute
)

// HostRule is the politeness of one host.
type HostRule struct {
	// Concurrency is the most requests in flight; 0 means no limit (and no lease).
	Concurrency int
	// Delay is the least time between the starts of two requests.
	Delay time.Duration
}

// arg is the rule as the frontier's scripts store it.
func (r HostRule) arg() string {
	return strconv.Itoa(max(r.Concurrency, 0)) + " " + strconv.FormatInt(max(r.Delay.Milliseconds(), 0), 10)
}

// HostDefaults is the politeness of every host without a rule of its own, and how the
// frontier enforces it.
type HostDefaults struct {
	// Rule applies to every host without a limit rule of its own.
	HostRule
	// LeaseTTL bounds how long a slot stays taken if its fetcher dies without giving it
	// back; set it above the download timeout. Default DefaultLeaseTTL.
	LeaseTTL time.Duration
	// Quantum is the most requests of one host handed out per turn. Default
	// DefaultHostQuantum.
	Quantum int
	// HandOutWindow, above 0, lets Hosts.Finish hand requests of ready hosts out to the
	// requests stream in the same script call that gives a slot back, keeping the
	// stream's unread backlog within it (the dispatcher's window): a freed slot is used
	// at once instead of at the dispatcher's next round. 0: only the dispatcher hands out.
	HandOutWindow int
	// CountUnread counts unread requests with XRANGE instead of trusting XINFO's lag
	// (see DispatcherConfig.CountUnread); used with HandOutWindow.
	CountUnread bool
}

func (d *HostDefaults) setDefaults() {
	d.LeaseTTL = cmp.Or(d.LeaseTTL, DefaultLeaseTTL)
	d.Quantum = cmp.Or(d.Quantum, DefaultHostQuantum)
}

// Hosts is the fetchers' side of per-host politeness: the frontier hands a request of a
// host with a concurrency limit out with a lease on one of its slots, and the fetcher
// gives the slot back when the fetch is over, with what it learned of the host (how
// long it took, whether it asked to slow down). State lives in Redis, timed by the
// Redis clock, so N fetchers are as polite as one.
type Hosts struct {
	rdb      redis.UniversalClient
	layout   Layout
	defaults HostDefaults
	order    Order
	b        *rkit.Pipeline
	fin      *rkit.Group[*finishJob]
}

// NewHosts returns the politeness state of the crawl (each host's in its partition).
func NewHosts(rdb redis.UniversalClient, layout Layout, defaults HostDefaults, order Order) (*Hosts, error) {
	if rdb == nil {
		return nil, errors.New("frontier: hosts needs a redis client")
	}
	if order == "" {
		order = OrderPriority
	}
	defaults.setDefaults()
	h := &Hosts{rdb: rdb, layout: layout, defaults: defaults, order: order,
		b: rkit.NewPipeline(rdb, 64, rkit.WriteTimeout, rkit.WriteLinger)}
	h.fin = rkit.NewGroup(rkit.GroupConfig[*finishJob]{Max: 64, Linger: rkit.WriteLinger, Timeout: rkit.WriteTimeout, Flush: h.finish})
	return h, nil
}

// Outcome is how a fetch of a host ended, for its schedule.
type Outcome int

// Outcomes of a fetch.
const (
	// Done: the host answered (any status but 429 and 503); a back-off decays.
	Done Outcome = iota
	// SlowDown: the host answered 429 or 503; it is pushed back for every fetcher,
	// longer after each in a row, at least for its Retry-After.
	SlowDown
	// NotStarted: no request was made (robots.txt disallowed the URL, a check failed).
	NotStarted
)

// arg is the outcome as finishScript takes it.
func (o Outcome) arg() string {
	switch o {
	case SlowDown:
		return "slow"
	case NotStarted:
		return "none"
	}
	return "done"
}

// Finish says how a fetcher's turn at a host ended.
type Finish struct {
	// Host is the request's host (as in its URL; normalised here).
	Host string
	// Lease is the requests stream ID of the request the slot was leased for; empty
	// when the host has no concurrency limit.
	Lease string
	// Started is when the request to the host started (this machine's clock); the
	// host's next start is its delay after it, reckoned on the Redis clock from the time
	// elapsed since, taken when the call leaves for Redis. Ignored for NotStarted.
	Started time.Time
	// Outcome of the fetch.
	Outcome Outcome
	// RetryAfter is the server's Retry-After with SlowDown.
	RetryAfter time.Duration
	// Autothrottle feeds the request's duration to the host's AutoThrottle latency
	// (shared by every fetcher), which raises its delay.
	Autothrottle bool
	// Requeue, when set, is a request (encoded) that goes back to the host's queue,
	// in the same step, not before Wait from now: a page whose turn robots.txt used.
	Requeue []byte
	// Priority and Depth of Requeue place it in its host's queue.
	Priority, Depth int
	// Wait is the least time before the host starts its next request.
	Wait time.Duration
}

// Finish ends a fetcher's turn at a host (see Finish) and returns when the host may
// start its next request (zero: now). Calls of many fetchers share one script call (see
// finishScript).
func (h *Hosts) Finish(ctx context.Context, f Finish) (time.Time, error) {
	host := NormalHost(f.Host)
	j := &finishJob{part: h.layout.PartitionOf(host), host: host, f: f}
	err := h.fin.Do(ctx, j)
	if err == nil {
		err = j.err
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("frontier: finish turn at host %s: %w", host, err)
	}
	if j.next == 0 {
		return time.Time{}, nil
	}
	return time.UnixMilli(j.next), nil
}

// SetCrawlDelay records host's robots.txt Crawl-delay, which raises its delay for every
// fetcher (0 removes it).
func (h *Hosts) SetCrawlDelay(ctx context.Context, host string, d time.Duration) error {
	host = NormalHost(host)
	key := h.layout.ForHost(host).Hosts()
	c := &rkit.Call{Add: func(ctx context.Context, p redis.Pipeliner) redis.Cmder {
		if d <= 0 {
			return p.HDel(ctx, key, host+":c")
		}
		return p.HSet(ctx, key, host+":c", d.Milliseconds())
	}}
	err := h.b.Do(ctx, c)
	if err == nil {
		err = c.Reply.Err()
	}
	if err != nil {
		return fmt.Errorf("frontier: set crawl-delay of %s: %w", host, err)
	}
	return nil
}

// Close stops the batchers after running what was queued.
func (h *Hosts) Close() {
	h.fin.Close()
	h.b.Close()
}

// DueHosts returns how many hosts of the crawl may start a request by now: ready, or
// scheduled no later than now (by this machine's clock).
func DueHosts(ctx context.Context, rdb redis.UniversalClient, l Layout, now time.Time) (int64, error) {
	parts := l.Parts()
	cmds := make([][2]*redis.IntCmd, len(parts))
	at := strconv.FormatInt(now.UnixMilli(), 10)
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range parts {
			cmds[i] = [2]*redis.IntCmd{p.ZCard(ctx, k.Ready()), p.ZCount(ctx, k.Sched(), "-inf", at)}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("frontier: due hosts: %w", err)
	}
	var n int64
	for _, c := range cmds {
		n += c[0].Val() + c[1].Val()
	}
	return n, nil
}

// Leased reports whether the request with stream ID lease still holds a slot of host.
// A request delivered again after its fetcher died may have lost it (the dead fetcher
// gave it back before its ack went out, or the lease expired): it must not be fetched
// without one.
func (h *Hosts) Leased(ctx context.Context, host, lease string) (bool, error) {
	host = NormalHost(host)
	key := h.layout.ForHost(host).Leases()
	c := &rkit.Call{Add: func(ctx context.Context, p redis.Pipeliner) redis.Cmder {
		return p.ZScore(ctx, key, host+"|"+lease)
	}}
	err := h.b.Do(ctx, c)
	if err == nil {
		err = c.Reply.Err()
	}
	if rkit.ErrNil(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("frontier: lease of %s: %w", host, err)
	}
	return true, nil
}
