package fetch

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders"
)

// redirectRefused ends a fetch whose redirect leads where a link could not: out of
// scope, to a scheme other than http(s), or to a path robots.txt disallows. It is final
// (counted as redirect_refused_<reason>, never retried).
type redirectRefused struct {
	reason string // spiders.DropOffsite, DropScheme, DropDepth, "robots"
	target string
}

func (e *redirectRefused) Error() string {
	return fmt.Sprintf("fetch: redirect to %s refused (%s)", e.target, e.reason)
}

// redirectRobotsWait bounds how long a redirect hop waits for another fetcher to fetch
// the target host's robots.txt.
const redirectRobotsWait = 30 * time.Second

// depthKey carries the depth of the request being fetched to checkRedirect.
type depthKey struct{}

// checkRedirect is the fetch client's CheckRedirect: every hop is checked as a request
// of its own, like a link: the redirect limit and scheme, the spider's scope (allowed
// domains, max depth), for found links the spider's follow rules (allow/deny), and the
// target host's robots.txt. The network guard checks the
// hop again when it connects.
func (f *httpFetch) checkRedirect(req *http.Request, via []*http.Request) error {
	if err := checkHops(req, via, f.settings.Redirects()); err != nil {
		return err
	}
	if _, proxied := req.Context().Value(proxyKey{}).(*url.URL); proxied && f.guard != nil {
		if err := f.guard.checkProxiedTarget(req.Context(), req.URL); err != nil {
			return err
		}
	}
	depth, _ := req.Context().Value(depthKey{}).(int)
	if ok, reason := f.scope.Allows(&spiders.Request{URL: req.URL.String(), Depth: depth}); !ok {
		return &redirectRefused{reason: reason, target: req.URL.Redacted()}
	}
	if depth > 0 && f.follows != nil && !f.follows(req.URL) {
		return &redirectRefused{reason: "rules", target: req.URL.Redacted()}
	}
	if f.robots == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(req.Context(), redirectRobotsWait)
	defer cancel()
	for {
		v, err := f.robots.check(ctx, req.URL)
		switch {
		case err != nil:
			return err
		case v.unavailable: // a retry of the page finds out later
			return fmt.Errorf("fetch: redirect to %s: robots.txt of %s unavailable", req.URL.Redacted(), req.URL.Host)
		case v.wait > 0:
			select {
			case <-ctx.Done():
				return fmt.Errorf("fetch: waiting for robots.txt of %s: %w", req.URL.Host, ctx.Err())
			case <-time.After(v.wait):
			}
			continue
		case !v.allowed:
			return &redirectRefused{reason: "robots", target: req.URL.Redacted()}
		}
		return nil
	}
}
