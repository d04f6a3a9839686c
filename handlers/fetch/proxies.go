package fetch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/streamcrawl/streamcrawl/handlers/internal/wake"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
)

// Proxy defaults.
const (
	defaultProxyBanAfter = 3
	defaultProxyBanFor   = 5 * time.Minute
)

// proxyKey carries the proxy of one fetch to the transport's Proxy function.
type proxyKey struct{}

// proxyFor is the transport's Proxy function: the fetch's proxy, else the environment's.
func proxyFor(req *http.Request) (*url.URL, error) {
	if u, ok := req.Context().Value(proxyKey{}).(*url.URL); ok {
		return u, nil
	}
	return http.ProxyFromEnvironment(req)
}

// proxyPool rotates over the spider's proxies, at most limit fetches in flight through
// each (0: no limit), and benches for banFor a proxy that failed banAfter times in a
// row. It is per fetch process.
type proxyPool struct {
	limit    int
	banAfter int
	banFor   time.Duration

	mu      sync.Mutex
	proxies []*proxyState
	next    int
	changed wake.Signal // broadcast when a slot frees
}

type proxyState struct {
	u        *url.URL
	inFlight int
	fails    int
	until    time.Time // benched until
}

func newProxyPool(s spiders.Settings) *proxyPool {
	if len(s.Proxies) == 0 {
		return nil
	}
	p := &proxyPool{limit: s.ProxyConcurrency, banAfter: s.ProxyBanAfter, banFor: s.ProxyBanFor}
	if p.banAfter == 0 {
		p.banAfter = defaultProxyBanAfter
	}
	if p.banFor == 0 {
		p.banFor = defaultProxyBanFor
	}
	for _, raw := range s.Proxies {
		u, _ := spiders.ParseProxy(raw) // checked by Settings.Validate
		p.proxies = append(p.proxies, &proxyState{u: u})
	}
	return p
}

// acquire returns the next proxy in rotation that is not benched and has a free slot,
// waiting for one while all are busy. When every proxy is benched it returns the one
// whose rest ends first, so the crawl probes it rather than stall.
func (p *proxyPool) acquire(ctx context.Context) (*proxyState, error) {
	for {
		p.mu.Lock()
		now := time.Now()
		var soonest *proxyState
		allBenched := true
		for i := range p.proxies {
			ps := p.proxies[(p.next+i)%len(p.proxies)]
			if now.Before(ps.until) {
				if soonest == nil || ps.until.Before(soonest.until) {
					soonest = ps
				}
				continue
			}
			allBenched = false
			if p.limit == 0 || ps.inFlight < p.limit {
				p.next = (p.next + i + 1) % len(p.proxies)
				ps.inFlight++
				p.mu.Unlock()
				return ps, nil
			}
		}
		if allBenched {
			soonest.inFlight++
			p.mu.Unlock()
			return soonest, nil
		}
		if err := p.changed.Wait(ctx, &p.mu); err != nil {
			return nil, err
		}
	}
}

// release gives back ps's slot; failed says whether the proxy failed the fetch. It
// reports whether this failure benched the proxy.
func (p *proxyPool) release(ps *proxyState, failed bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	ps.inFlight--
	benched := false
	if failed {
		ps.fails++
		if ps.fails >= p.banAfter {
			ps.fails, ps.until, benched = 0, time.Now().Add(p.banFor), true
		}
	} else {
		ps.fails = 0
	}
	p.changed.Broadcast()
	return benched
}

// proxyFailed reports a fetch that failed because of its proxy: it could not be
// reached, refused the tunnel or the SOCKS handshake, or asked for credentials.
func proxyFailed(resp *http.Response, err error) bool {
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "proxyconnect" {
			return true
		}
		msg := err.Error()
		return strings.Contains(msg, "proxyconnect") || strings.Contains(msg, "socks connect")
	}
	return resp != nil && resp.StatusCode == http.StatusProxyAuthRequired
}

// checkProxiedTarget applies the network guard to the target of a proxied fetch, whose
// address the proxy resolves and connects to, not this process: the target's host is
// resolved here and refused if any address is one the guard refuses.
func (g *netGuard) checkProxiedTarget(ctx context.Context, u *url.URL) error {
	host := spiders.HostKeyName(spiders.HostKeyOf(u))
	if g.hosts[host] {
		return nil
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		addrs, err = net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return err
		}
	}
	for _, a := range addrs {
		if !g.allowedIP(a) {
			return &blockedError{addr: a}
		}
	}
	return nil
}

// blockedError is errBlockedAddress for one address.
type blockedError struct{ addr netip.Addr }

func (e *blockedError) Error() string {
	return errBlockedAddress.Error() + ": " + e.addr.String() + " is not a public address (list it in allow_networks to crawl it)"
}

func (e *blockedError) Unwrap() error { return errBlockedAddress }

// pickProxy returns the proxy req goes through, for an HTTP fetch and a rendered page
// alike: its meta "proxy", else the next of the rotation p (nil: none) with the slot
// taken (nil for a meta proxy); a nil URL when neither. A meta proxy that does not parse
// is poison; a wait for a free proxy that ends is retryable.
func pickProxy(ctx context.Context, p *proxyPool, req *spiders.Request) (*url.URL, *proxyState, error) {
	if raw, ok := req.Meta["proxy"].(string); ok && raw != "" {
		u, err := spiders.ParseProxy(raw)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: fetch: meta proxy of %s: %w", streams.ErrPoison, spiders.RedactedURL(req.URL), err)
		}
		return u, nil, nil
	}
	if p == nil {
		return nil, nil, nil
	}
	ps, err := p.acquire(ctx)
	if err != nil {
		return nil, nil, &retryableError{err: fmt.Errorf("fetch: waiting for a proxy: %w", err)}
	}
	return ps.u, ps, nil
}
