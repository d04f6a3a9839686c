package fetch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams/hostgate"
)

// A host that other crawls reach too (Config.SharedHosts) keeps one pace for all of
// them: right before a request to it leaves, after the crawl's own turn (the frontier
// handed it out, robots.txt was checked), the fetcher passes the host's fleet-wide gate
// (package streams/hostgate) with the crawl's rule for the host, its Crawl-delay
// included, and gives the gate's slot back once the answer is read. While the gate
// says wait, the fetcher sleeps and asks again, its own slot at the host held; a wait
// that would take it past gateMaxWait puts the request back in its host's queue for
// that wait instead (the crawl's host waits, its other hosts go on). A robots.txt
// fetch passes the gate too: the site sees it. A 429 or 503 with a Retry-After holds
// the host at the gate for that long (at most hostgate.MaxBackoff), for every crawl.
//
// The fence (fence.go) still has the last word: the check before sending runs after
// the gate's wait. A fetcher that dies holding a gate slot frees it when the slot's
// lease (leaseTTL) ends.

// gateMaxWait bounds how long a request waits at a shared host's gate holding one of
// the crawl's fetch slots before it goes back to its host's queue.
const gateMaxWait = 5 * time.Second

// fleetGate is the fetcher's use of the hosts' gate: nil when no host is shared.
type fleetGate struct {
	gate   *hostgate.Gate
	shared func(host string) bool
	prefix string // this process's part of the gate tokens
	seq    atomic.Uint64
}

func newFleetGate(g *hostgate.Gate, shared func(string) bool) *fleetGate {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return &fleetGate{gate: g, shared: shared, prefix: hex.EncodeToString(b) + "-"}
}

// gatePass is a slot held at a host's gate, to give back with leave.
type gatePass struct {
	g     *fleetGate
	host  string
	token string
}

// enter asks host's gate (when host is shared) under rule until it grants a slot,
// sleeping each wait; it gives up with the gate's next wait, holding nothing, when that
// wait would take it past bound. A nil pass and no wait: the host is not shared, or
// ctx ended (then with its error).
func (g *fleetGate) enter(ctx context.Context, host string, rule hostgate.Rule, lease, bound time.Duration) (*gatePass, time.Duration, error) {
	if g == nil || !g.shared(host) {
		return nil, 0, nil
	}
	p := &gatePass{g: g, host: host, token: g.prefix + strconv.FormatUint(g.seq.Add(1), 16)}
	began := time.Now()
	for {
		wait, err := g.gate.Acquire(ctx, host, rule, p.token, lease)
		switch {
		case err != nil:
			return nil, 0, err
		case wait == 0:
			return p, 0, nil
		case bound > 0 && time.Since(began)+wait > bound:
			return nil, wait, nil
		}
		select {
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// leave gives the slot back (safe on a nil pass), with the back-off the answer asked
// for (its Retry-After; 0: none), which holds the host for every crawl. A failure is
// logged: the slot's lease then ends by itself.
func (p *gatePass) leave(ctx context.Context, log *zap.Logger, backoff time.Duration) {
	if p == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := p.g.gate.Release(ctx, p.host, p.token, backoff); err != nil {
		log.Debug("giving back a shared host's gate slot failed; its lease ends by itself", zap.String("host", p.host), zap.Error(err))
	}
}

// gateBackoff is the back-off an answer asks of every crawl at its host: the
// Retry-After of a 429 or 503 (the frontier's own back-off levels stay the crawl's).
func gateBackoff(err error) time.Duration {
	var rerr *retryableError
	if !errors.As(err, &rerr) || !rerr.slowDown() {
		return 0
	}
	d, _ := parseRetryAfter(rerr.retryAfter, time.Now())
	return d
}

// gateRule is the turn's rule for the host's gate: the crawl's, raised by the host's
// Crawl-delay once robots.txt was read.
func (t *turn) gateRule() hostgate.Rule {
	return hostgate.Rule{Delay: max(t.rule.Delay, t.crawlDelay), Concurrency: t.rule.Concurrency}
}

// enterGate passes the host's gate for the turn's request (see above). It reports
// whether the request went back to its host's queue instead (the gate's wait was too
// long), with an error when it could not be put back or the gate could not be asked.
func (t *turn) enterGate(ctx context.Context) (*gatePass, bool, error) {
	f := t.f
	p, wait, err := f.gate.enter(ctx, t.host, t.gateRule(), leaseTTL(f.settings), gateMaxWait)
	switch {
	case err != nil:
		return nil, false, err
	case p == nil && wait > 0:
		f.count("requests_requeued_host_gate", 1)
		return nil, true, t.requeue(ctx, time.Time{}, wait)
	}
	return p, false, nil
}

// robotsGate passes the gate of origin's host before its robots.txt is fetched: with
// the crawl's rule for the host, and no bound but ctx's (the robots.txt fetch is the
// host's turn, and its lock holds the host's other requests meanwhile).
func (s *shared) robotsGate(ctx context.Context, origin string) (func(), error) {
	host := spiders.HostKey(origin)
	r := ruleOf(s.settings, host)
	p, _, err := s.gate.enter(ctx, host, hostgate.Rule{Delay: r.Delay, Concurrency: r.Concurrency}, leaseTTL(s.settings), 0)
	if err != nil {
		return nil, err
	}
	return func() { p.leave(ctx, s.log, 0) }, nil
}
