package fetch

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders"
)

// navigate returns the check a rendered page's main frame passes before it loads a
// document. The first document (the request's URL) was checked by Do (robots.txt)
// and by the frontier (scope): only the fence (beforeSend: the fetcher still holds the
// request and its slot) and the guard are asked here, the guard so that a page on a
// private address is dropped as such rather than rendered as the proxy's refusal.
// Every later one (a redirect hop, a script's navigation) is checked like a
// redirect of the HTTP fetcher: scheme, scope, the spider's follow rules for found
// links, the target's robots.txt and the guard.
func (b *browserFetch) navigate(fetchCtx context.Context, req *spiders.Request) func(ctx context.Context, u *url.URL, first bool) error {
	return func(ctx context.Context, u *url.URL, first bool) error {
		if first {
			// The last moment before the page's request leaves: the tab was waited for.
			if err := beforeSend(fetchCtx); err != nil {
				return err
			}
		} else {
			if err := b.checkNavigation(ctx, u, req.Depth); err != nil {
				return err
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

// checkNavigation checks a document a page's main frame goes to after its first one.
func (b *browserFetch) checkNavigation(ctx context.Context, u *url.URL, depth int) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return &redirectRefused{reason: spiders.DropScheme, target: u.Redacted()}
	}
	if ok, reason := b.scope.Allows(&spiders.Request{URL: u.String(), Depth: depth}); !ok {
		return &redirectRefused{reason: reason, target: u.Redacted()}
	}
	if depth > 0 && b.follows != nil && !b.follows(u) {
		return &redirectRefused{reason: "rules", target: u.Redacted()}
	}
	if b.robots == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, navigationRobotsWait)
	defer cancel()
	for {
		v, err := b.robots.check(ctx, u)
		switch {
		case err != nil:
			return err
		case v.unavailable:
			return fmt.Errorf("fetch: navigation to %s: robots.txt of %s unavailable", u.Redacted(), u.Host)
		case v.wait > 0:
			select {
			case <-ctx.Done():
				return fmt.Errorf("fetch: waiting for robots.txt of %s: %w", u.Host, ctx.Err())
			case <-time.After(v.wait):
			}
			continue
		case !v.allowed:
			return &redirectRefused{reason: "robots", target: u.Redacted()}
		}
		return nil
	}
}
