package fetch

import (
	"context"
	"fmt"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders"
)

// navigate returns the check a rendered page's main frame passes before it loads a
// document. The first document (the request's URL) was checked by Do (robots.txt)
// and by the frontier (scope): only the fence (beforeSend: the fetcher still holds the
// request and its slot) and the guard are asked here, the guard so that a page on a
// private address is dropped as such rather than rendered as the proxy's refusal.
// Every later one (a redirect hop, a script's navigation, a meta refresh) counts
// against max_redirects (past it, it is refused: before the page loaded, the page is
// dropped as redirect_refused_max_redirects; after, the page stays and keeps what it
// has), is checked like a redirect of the HTTP fetcher (scheme, scope, the spider's
// follow rules for found links, the target's robots.txt and the guard), and, on the
// page's own host, waits the host's delay after its previous start (see
// browser_pace.go; a document of another host waits in the page's proxy).
func (b *browserFetch) navigate(fetchCtx context.Context, req *spiders.Request) func(ctx context.Context, u *url.URL, first bool) error {
	own := spiders.HostKey(req.URL)
	limit := int64(b.settings.Redirects())
	var later, newest atomic.Int64
	var seen atomic.Bool
	return func(ctx context.Context, u *url.URL, first bool) error {
		// A page that reloads itself before its load event would show its URL as the
		// first document again and again: only one is.
		if first && !seen.CompareAndSwap(false, true) {
			first = false
		}
		if first {
			// The last moment before the page's request leaves: the tab was waited for.
			if err := beforeSend(fetchCtx); err != nil {
				return err
			}
			b.pace.started(own, time.Now(), ruleOf(b.settings, own).Delay)
		} else {
			if later.Load() >= limit {
				b.count("render_navigations_over_limit", 1)
				return &redirectRefused{reason: "max_redirects", target: u.Redacted()}
			}
			crawlDelay, err := b.checkNavigation(ctx, u, req.Depth)
			if err != nil {
				return err
			}
			if host := spiders.HostKeyOf(u); host == own {
				// A navigation that started while an older one waited replaces it (the
				// browser dropped the older one): only the newest goes on, and only
				// what loads counts against max_redirects.
				gen := newest.Add(1)
				waited, err := b.pace.wait(ctx, host)
				if waited > 0 {
					b.count("render_navigations_paced", 1)
				}
				if err != nil {
					return fmt.Errorf("fetch: navigation to %s waiting for its host's turn: %w", u.Redacted(), err)
				}
				if newest.Load() != gen {
					return &redirectRefused{reason: "superseded", target: u.Redacted()}
				}
				b.pace.started(host, time.Now(), max(ruleOf(b.settings, host).Delay, crawlDelay))
			}
			if later.Add(1) > limit {
				b.count("render_navigations_over_limit", 1)
				return &redirectRefused{reason: "max_redirects", target: u.Redacted()}
			}
		}
		if b.guard != nil {
			return b.guard.checkProxiedTarget(ctx, u)
		}
		return nil
	}
}

// navigationRobotsWait bounds how long a navigation waits for another fetcher to fetch
// the robots.txt of its target host.
const navigationRobotsWait = 30 * time.Second

// checkNavigation checks a document a page's main frame goes to after its first one,
// and returns its host's robots.txt Crawl-delay (0: none, or not known).
func (b *browserFetch) checkNavigation(ctx context.Context, u *url.URL, depth int) (time.Duration, error) {
	if u.Scheme != "http" && u.Scheme != "https" {
		return 0, &redirectRefused{reason: spiders.DropScheme, target: u.Redacted()}
	}
	if ok, reason := b.scope.Allows(&spiders.Request{URL: u.String(), Depth: depth}); !ok {
		return 0, &redirectRefused{reason: reason, target: u.Redacted()}
	}
	if depth > 0 && b.follows != nil && !b.follows(u) {
		return 0, &redirectRefused{reason: "rules", target: u.Redacted()}
	}
	if b.robots == nil {
		return 0, nil
	}
	ctx, cancel := context.WithTimeout(ctx, navigationRobotsWait)
	defer cancel()
	for {
		v, err := b.robots.check(ctx, u)
		switch {
		case err != nil:
			return 0, err
		case v.unavailable:
			return 0, fmt.Errorf("fetch: navigation to %s: robots.txt of %s unavailable", u.Redacted(), u.Host)
		case v.wait > 0:
			select {
			case <-ctx.Done():
				return 0, fmt.Errorf("fetch: waiting for robots.txt of %s: %w", u.Host, ctx.Err())
			case <-time.After(v.wait):
			}
			continue
		case !v.allowed:
			return 0, &redirectRefused{reason: "robots", target: u.Redacted()}
		}
		return v.delay, nil
	}
}
