package fetch

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
)

// A rendered page takes its host's turn like an HTTP fetch (the frontier hands its
// request out when the host may start one, and the turn ends when the page is done).
// Everything else the page loads is paced here, so that neither a script that
// navigates in a loop nor a fetch() flood outruns the crawl's politeness:
//
//   - Every document the main frame loads after the first (a redirect, a script's
//     navigation, a meta refresh) counts against max_redirects for the page; past it,
//     the navigation is refused (navigate, browser_nav.go). A document of the page's
//     own host waits the host's delay (its rule's, or its robots.txt Crawl-delay if
//     longer) after the previous start of that host: the page holds its host's turn,
//     and a host with a delay has one request in flight at a time.
//   - Every request to another host (its sub-resources, fetch and XHR calls, a
//     navigation there), as the page's proxy sees it, waits that host's delay after
//     the previous request this process started there, and is told to the frontier
//     (Finish, as the HTTP fetcher's turns are), so that the crawl's own next request
//     to the host waits its delay after it too.
//   - A page makes at most render_max_requests requests (documents, sub-resources, and
//     each CONNECT tunnel as one); past it, the proxy refuses them.
//
// Requests to the page's own host other than documents are not paced: they are the
// page, loaded within its host's turn, as a browser loads them. Inside an HTTPS tunnel
// the proxy sees the tunnel, not its requests: it is the tunnel that is paced and
// counted.

// hostPacer spaces the requests rendered pages make to a host, in this fetch process:
// one at a time, each its delay after the previous one ended (as the frontier paces a
// host with a delay), and the documents of a page's own host after its previous start.
type hostPacer struct {
	hosts *frontier.Frontier // told of each request's end; nil: not told
	log   *zap.Logger

	mu    sync.Mutex
	next  map[string]time.Time // host key -> the earliest start of its next request
	busy  map[string]bool      // host key -> a request of it is in flight
	freed chan struct{}        // closed (and replaced) when a request ends
}

// maxPacedHosts bounds the pacer's map: above it, hosts whose next start has passed
// are forgotten (they wait for nothing).
const maxPacedHosts = 4096

func newHostPacer(hosts *frontier.Frontier, log *zap.Logger) *hostPacer {
	return &hostPacer{hosts: hosts, log: log, next: map[string]time.Time{}, busy: map[string]bool{}, freed: make(chan struct{})}
}

// started records a start at host (the page's first document, whose turn the frontier
// gave, or a document of its host): the next request waits delay after it.
func (p *hostPacer) started(host string, at time.Time, delay time.Duration) {
	if delay <= 0 {
		return
	}
	p.mu.Lock()
	p.push(host, at.Add(delay))
	p.mu.Unlock()
}

// push moves host's next start to at, unless it is later already. Called with p.mu
// held.
func (p *hostPacer) push(host string, at time.Time) {
	if len(p.next) > maxPacedHosts {
		now := time.Now()
		for h, n := range p.next {
			if n.Before(now) && !p.busy[h] {
				delete(p.next, h)
			}
		}
	}
	if at.After(p.next[host]) {
		p.next[host] = at
	}
}

// wait waits, within ctx, until host may start a request (see started), without
// taking the turn. It returns how long it waited.
func (p *hostPacer) wait(ctx context.Context, host string) (time.Duration, error) {
	p.mu.Lock()
	at := p.next[host]
	p.mu.Unlock()
	d := time.Until(at)
	if d <= 0 {
		return 0, nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return d, ctx.Err()
	case <-t.C:
		return d, nil
	}
}

// take waits, within ctx, until host has no request in flight and its delay since the
// previous one has passed, and takes the turn: the caller must call ended. It returns
// how long it waited.
func (p *hostPacer) take(ctx context.Context, host string) (time.Duration, error) {
	began := time.Now()
	for {
		p.mu.Lock()
		now := time.Now()
		at, busy, freed := p.next[host], p.busy[host], p.freed
		if !busy && !at.After(now) {
			p.busy[host] = true
			p.mu.Unlock()
			return now.Sub(began), nil
		}
		p.mu.Unlock()
		var timer *time.Timer
		var due <-chan time.Time
		if !busy {
			timer = time.NewTimer(at.Sub(now))
			due = timer.C
		}
		select {
		case <-ctx.Done():
		case <-freed:
		case <-due:
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return time.Since(began), ctx.Err()
		}
	}
}

// ended ends a request take let through: the host's next start is delay after now
// (per_host_delay counts from the end of the previous request), here and, told to
// the frontier (Finish, as the HTTP fetcher's turns are), for the crawl's own next
// request to the host.
func (p *hostPacer) ended(ctx context.Context, host string, started time.Time, delay time.Duration) {
	p.mu.Lock()
	delete(p.busy, host)
	p.push(host, time.Now().Add(delay))
	close(p.freed)
	p.freed = make(chan struct{})
	p.mu.Unlock()
	if p.hosts == nil {
		return
	}
	if _, err := p.hosts.Finish(context.WithoutCancel(ctx), frontier.Finish{Host: host, Started: started}); err != nil {
		p.log.Debug("telling the frontier of a rendered page's request failed", zap.String("host", host), zap.Error(err))
	}
}

// errRequestCap refuses a page's requests past render_max_requests.
var errRequestCap = fmt.Errorf("fetch: the page made more requests than render_max_requests")

// subrequests returns the Job.Request of a rendered page of req: its cap, and the
// pacing of its requests to other hosts (see above).
func (b *browserFetch) subrequests(req *spiders.Request) func(ctx context.Context, addr string) (func(), error) {
	own := spiders.HostKey(req.URL)
	limit := int64(b.settings.RenderMaxRequests)
	var made, capped atomic.Int64
	var ownSeen atomic.Bool
	none := func() {}
	return func(ctx context.Context, addr string) (func(), error) {
		if made.Add(1) > limit {
			if capped.Add(1) == 1 {
				b.log.Info("a rendered page made more requests than render_max_requests; the rest are refused",
					zap.String("url", spiders.RedactedURL(req.URL)), zap.Int64("render_max_requests", limit))
			}
			b.count("render_subrequests_capped", 1)
			return nil, errRequestCap
		}
		host := addrHostKey(addr)
		if host == own && ownSeen.CompareAndSwap(false, true) {
			// The page's first request to its host is its document leaving (the
			// browser may have started long after the turn began): its later
			// documents wait the delay after this.
			b.pace.started(own, time.Now(), ruleOf(b.settings, own).Delay)
		}
		delay := ruleOf(b.settings, host).Delay
		if host == own || host == "" || delay <= 0 {
			return none, nil
		}
		waited, err := b.pace.take(ctx, host)
		if waited > 0 {
			b.count("render_subrequests_paced", 1)
		}
		if err != nil {
			return nil, err
		}
		started := time.Now()
		var once sync.Once
		return func() { once.Do(func() { b.pace.ended(ctx, host, started, delay) }) }, nil
	}
}

// addrHostKey is the host key of a host:port the page's proxy was asked for (443:
// https, any other port: http, as a browser writes them).
func addrHostKey(addr string) string {
	scheme := "http"
	if _, port, err := net.SplitHostPort(addr); err == nil && port == "443" {
		scheme = "https"
	}
	return spiders.HostKeyOf(&url.URL{Scheme: scheme, Host: addr})
}
