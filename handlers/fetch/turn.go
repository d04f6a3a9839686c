package fetch

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
	"github.com/streamcrawl/streamcrawl/streams/loop"
)

// robotsWait is how long a host's requests wait while another fetcher fetches its
// robots.txt.
const robotsWait = 300 * time.Millisecond

// turn is one request's turn at its host: what the fetcher owes the host's schedule
// when the turn ends (its slot back, when the request came with a lease; the back-off
// a 429 or 503 asks for; the AutoThrottle latency).
type turn struct {
	f     *Fetcher
	req   *spiders.Request
	host  string // spiders.HostKey of the request's URL
	rule  frontier.HostRule
	lease string // the requests stream ID the slot was leased for; "" when no slot
	owner string // the consumer holding the request's entry (Delivery.Owner)
	// leaseSeen is when the lease was last known held: its start, then each check.
	leaseSeen time.Time
	// crawlDelay is the host's robots.txt Crawl-delay, once robots.txt was checked.
	crawlDelay time.Duration
}

func (f *Fetcher) newTurn(req *spiders.Request, d Delivery) *turn {
	host := spiders.HostKey(req.URL)
	t := &turn{f: f, req: req, host: host, rule: ruleOf(f.settings, host), owner: d.Owner}
	if t.rule.Concurrency > 0 {
		t.lease, t.leaseSeen = d.ID, leaseStart(d.ID)
	}
	return t
}

// slotLost puts a request delivered again back in its host's queue when it no longer
// holds a slot (its dead fetcher gave the slot back before its ack went out, or the
// lease expired): fetched now, it would be one request more than the host's
// concurrency. It reports whether it did; first deliveries are not looked at.
func (t *turn) slotLost(ctx context.Context, d Delivery) (bool, error) {
	if t.lease == "" || !d.Redelivered {
		return false, nil
	}
	seen := time.Now()
	held, err := t.f.hosts.Leased(ctx, t.host, t.lease)
	if err != nil || held {
		t.leaseSeen = seen
		return false, err
	}
	t.f.count("requests_requeued_slot_lost", 1)
	return true, t.requeue(ctx, time.Time{}, 0)
}

// unsent ends a turn whose request beforeSend refused to send: a request whose slot was
// handed on goes back to its host's queue (and its entry is acked); one whose entry is
// no longer this fetcher's is left to whoever holds it, its slot untouched.
func (t *turn) unsent(ctx context.Context, err error) (Result, error) {
	if errors.Is(err, errSlotLost) {
		t.f.count("requests_requeued_slot_lost", 1)
		return drop(DropRequeued), t.requeue(ctx, time.Time{}, 0)
	}
	t.f.count("requests_unsent_not_held", 1)
	return Result{}, err
}

// robots applies the robots.txt verdict to the turn. It returns why the turn ended
// there (DropRobots: disallowed; DropRequeued: robots.txt still being fetched
// elsewhere, or its fetch used the turn), "" when the page may be fetched now; with an
// error when the request could not be put back, so the input is not acked.
func (t *turn) robots(ctx context.Context, v robotsVerdict) (reason string, err error) {
	f := t.f
	t.crawlDelay = v.delay
	switch {
	case v.unreachable:
		return DropRobotsUnreachable, t.unreachable(ctx, v)
	case v.wait > 0:
		// Another fetcher is fetching robots.txt: the request waits in its host's queue.
		f.count("robots_waits", 1)
		return DropRequeued, t.requeue(ctx, time.Time{}, v.wait)
	case !v.fetched.IsZero() && v.delay > 0:
		if v.capped {
			f.count("robots_crawl_delay_capped", 1)
			f.log.Warn("robots.txt Crawl-delay cut to max_crawl_delay", zap.String("host", t.host), zap.Duration("max_crawl_delay", v.delay))
		}
		if err := f.hosts.SetCrawlDelay(ctx, t.host, v.delay); err != nil {
			return DropRequeued, err
		}
	}
	switch {
	case !v.allowed && len(t.req.RedirectURLs) > 0:
		f.count("redirect_refused_robots", 1) // a redirect's hop, refused as its redirect
		f.log.Info("redirect refused", zap.String("url", spiders.RedactedURL(t.req.RedirectURLs[len(t.req.RedirectURLs)-1])),
			zap.String("to", spiders.RedactedURL(t.req.URL)), zap.String("reason", "robots"))
		t.finish(ctx, frontier.Finish{Started: v.fetched})
		return DropRobots, nil
	case !v.allowed:
		f.count("robots_disallowed", 1)
		f.log.Debug("disallowed by robots.txt", zap.String("url", spiders.RedactedURL(t.req.URL)))
		t.finish(ctx, frontier.Finish{Started: v.fetched}) // zero when robots.txt was not fetched
		return DropRobots, nil
	case !v.fetched.IsZero() && (t.rule.Delay > 0 || v.delay > 0):
		// robots.txt was this turn's request to the host: the page waits for the delay.
		f.count("robots_turns", 1)
		return DropRequeued, t.requeue(ctx, v.fetched, 0)
	}
	return "", nil
}

// unreachable ends the turn of a request whose host's robots.txt stayed unavailable
// for every try, and drops the host's waiting requests to the dead letters with the
// reason (the request itself becomes one through Do's result), counted as
// robots_unreachable.
func (t *turn) unreachable(ctx context.Context, v robotsVerdict) error {
	f := t.f
	t.finish(ctx, frontier.Finish{Started: v.fetched})
	n, err := f.hosts.DropHost(ctx, t.host, streams.StageFetch, robotsUnreachableError(v).Error())
	f.count(DropRobotsUnreachable, int64(n)+1)
	if n > 0 {
		f.log.Warn("dropped the waiting requests of a host whose robots.txt is unreachable", zap.String("host", t.host),
			zap.Int("requests", n), zap.String("why", v.why))
	}
	return err
}

// robotsUnreachableError is the dead letter's error of a request whose host's
// robots.txt stayed unavailable: it starts with DropRobotsUnreachable.
func robotsUnreachableError(v robotsVerdict) error {
	return fmt.Errorf("%s: %s", DropRobotsUnreachable, v.why)
}

// requeue ends the turn (started: when its request started; zero: none was made) and
// puts the request back in its host's queue in one step.
func (t *turn) requeue(ctx context.Context, started time.Time, wait time.Duration) error {
	payload, err := spiders.MarshalRequest(t.req)
	if err != nil {
		return err
	}
	_, err = t.f.hosts.Finish(ctx, frontier.Finish{Host: t.host, Lease: t.lease, Owner: t.owner, Started: started, CrawlDelay: t.crawlDelay,
		Requeue: payload, Priority: t.req.Priority, Depth: t.req.Depth, Wait: wait})
	return err
}

// fetched ends the turn after a fetch started at started that ended now; slow is a 429
// or 503.
func (t *turn) fetched(ctx context.Context, started time.Time, slow bool, rerr *retryableError) {
	fin := frontier.Finish{Started: started, Ended: time.Now(), Autothrottle: t.f.autothrottle()}
	if slow {
		fin.SlowDown = true
		if d, ok := parseRetryAfter(rerr.retryAfter, time.Now()); ok {
			fin.RetryAfter = d // the frontier counts at most its longest back-off
		}
		t.f.count("host_slowdowns", 1)
		t.f.log.Info("host asks to slow down; every fetcher backs off", zap.String("host", t.host),
			zap.Int("status", rerr.status), zap.Duration("retry_after", fin.RetryAfter))
	}
	t.finish(ctx, fin)
}

// finishRetryFor is how long a turn tries to give its slot back while Redis fails it
// (a failover, replicas behind with durability replicated) before leaving the lease to
// expire (frontier.Config.LeaseTTL, a minute by default: the host's slot is lost that
// long).
const finishRetryFor = 20 * time.Second

// finish gives the slot back (when there is one) and tells the host's schedule what
// happened: when the request ended, from which its delay counts. Needless for a host
// without limits, unless it must learn something. A failure is tried again for up to
// finishRetryFor (giving a slot back twice frees it once), then logged: the lease then
// expires by itself.
func (t *turn) finish(ctx context.Context, fin frontier.Finish) {
	if t.lease == "" && !fin.SlowDown && !fin.Autothrottle && t.rule.Delay <= 0 && t.crawlDelay <= 0 {
		return
	}
	fin.Host, fin.Lease, fin.Owner, fin.CrawlDelay = t.host, t.lease, t.owner, t.crawlDelay
	began := time.Now()
	for attempt := 1; ; attempt++ {
		_, err := t.f.hosts.Finish(context.WithoutCancel(ctx), fin)
		if err == nil {
			return
		}
		if time.Since(began) >= finishRetryFor {
			t.f.log.Debug("giving back a host slot failed; it expires by itself", zap.Error(err))
			return
		}
		time.Sleep(loop.Backoff(100*time.Millisecond, 2*time.Second, attempt))
	}
}

// traceStart returns ctx traced to see when the request's headers were written, and a
// function returning that time (the call's, if none were written): the start of a
// request as close to the server as the fetcher can see it, which the host's delay
// counts from.
func traceStart(ctx context.Context) (context.Context, func() time.Time) {
	begun := time.Now()
	var wrote atomic.Int64 // Unix ns of the first WroteHeaders
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteHeaders: func() { wrote.CompareAndSwap(0, time.Now().UnixNano()) },
	})
	return ctx, func() time.Time {
		if ns := wrote.Load(); ns != 0 {
			return time.Unix(0, ns)
		}
		return begun
	}
}

// autothrottle reports the spider's autothrottle setting.
func (f *Fetcher) autothrottle() bool {
	return f.settings.Autothrottle
}
