package fetch

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
)

// Redirects are not followed inside a fetch: a 3xx answer with a usable Location ends
// the fetch, and its target becomes a new request (Do's Redirect outcome) that the
// fetch stage queues through the frontier like a link. So the hop takes its host's
// turn (concurrency, delay, Crawl-delay, back-off), is deduplicated, and meets scope,
// the follow rules, robots.txt and the network guard as any request does. What is
// checked here, before it is queued: the redirect limit across hops, the Location,
// the scheme, the spider's scope and, for found links, its follow rules. robots.txt is
// checked when the hop is fetched (counted redirect_refused_robots), the guard when it
// connects.

// redirectRefused ends a fetch whose redirect leads where a link could not: out of
// scope, to a scheme other than http(s), or to a path robots.txt disallows. It is final
// (counted as redirect_refused_<reason>, never retried).
type redirectRefused struct {
	reason string // spiders.DropOffsite, DropScheme, DropDepth, "rules", "robots"
	target string
}

func (e *redirectRefused) Error() string {
	return fmt.Sprintf("fetch: redirect to %s refused (%s)", e.target, e.reason)
}

// isRedirect reports an answer whose Location a client follows: 301, 302, 303, 307 or
// 308 with a Location header. Other 3xx answers (300, 304, a 3xx without Location)
// are pages like any other.
func isRedirect(status int, h http.Header) bool {
	switch status {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return h.Get("Location") != ""
	}
	return false
}

// redirect returns what becomes of req, answered with the redirect res: its next hop
// (Redirect), or a counted drop when the hop is refused, or a dead letter when the
// chain is longer than max_redirects.
func (s *shared) redirect(req *spiders.Request, res *spiders.Response) Result {
	limit := s.settings.Redirects()
	if limit == 0 {
		s.count("redirects_not_followed", 1)
		return drop("redirect_not_followed")
	}
	if len(req.RedirectURLs) >= limit {
		s.count("redirects_exhausted", 1)
		return dead(fmt.Errorf("%w: fetch: %s: more than %d redirects", streams.ErrPoison, spiders.RedactedURL(req.URL), limit))
	}
	next, err := redirectHop(req, res)
	if err != nil {
		// A Location no parser can read comes again on every retry.
		s.count("redirect_location_invalid", 1)
		s.log.Info("redirect with an unusable Location", zap.String("url", spiders.RedactedURL(req.URL)), zap.Error(err))
		return drop("redirect_location_invalid")
	}
	if refused := s.checkHop(next); refused != nil {
		s.count("redirect_refused_"+refused.reason, 1)
		s.log.Info("redirect refused", zap.String("url", spiders.RedactedURL(req.URL)), zap.String("to", refused.target), zap.String("reason", refused.reason))
		return drop("redirect_refused_" + refused.reason)
	}
	s.count("redirects_followed", 1)
	return Result{Outcome: Redirect, Request: next}
}

// checkHop checks a redirect's next request as a link is checked: the scheme, the
// spider's scope (allowed domains, max depth: a hop keeps its request's depth) and, for
// a request found on a page (depth > 0), the spider's follow rules.
func (s *shared) checkHop(next *spiders.Request) *redirectRefused {
	u, err := url.Parse(next.URL)
	if err != nil {
		return &redirectRefused{reason: spiders.DropInvalid, target: next.URL}
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return &redirectRefused{reason: spiders.DropScheme, target: u.Redacted()}
	}
	if ok, reason := s.scope.Allows(next); !ok {
		return &redirectRefused{reason: reason, target: u.Redacted()}
	}
	if next.Depth > 0 && s.follows != nil && !s.follows(u) {
		return &redirectRefused{reason: "rules", target: u.Redacted()}
	}
	return nil
}

// redirectHop returns the request a redirect of req leads to: its Location resolved
// against req's URL (the fragment dropped, written as browsers send it); the method of
// a 303, and of a 301 or 302 to a POST, becomes GET without a body, as browsers do;
// credentials in headers stay with their host; callback, meta, priority and depth are
// kept; the retries start afresh and the chain so far is in RedirectURLs. A hop to
// the URL itself (a cookie-setting loop) skips the duplicate filter: the redirect limit
// bounds it.
func redirectHop(req *spiders.Request, res *spiders.Response) (*spiders.Request, error) {
	base, err := url.Parse(req.URL)
	if err != nil {
		return nil, err
	}
	loc := strings.TrimSpace(res.Headers.Get("Location"))
	target, err := base.Parse(loc)
	if err != nil {
		return nil, fmt.Errorf("fetch: redirect of %s to %q: %w", spiders.RedactedURL(req.URL), loc, err)
	}
	target.Fragment, target.RawFragment = "", ""
	if target.Scheme == "http" || target.Scheme == "https" {
		if target.Host == "" {
			return nil, fmt.Errorf("fetch: redirect of %s to %q: no host", spiders.RedactedURL(req.URL), loc)
		}
	}
	next := *req
	next.URL = spiders.WireURL(target)
	next.Retries, next.LastError = 0, ""
	next.RedirectURLs = append(append([]string(nil), req.RedirectURLs...), req.URL)
	method := req.HTTPMethod()
	if res.Status == http.StatusSeeOther && method != http.MethodHead ||
		(res.Status == http.StatusMovedPermanently || res.Status == http.StatusFound) && method == http.MethodPost {
		next.Method, next.Body = "", nil
		next.Headers = without(req.Headers, "Content-Type", "Content-Length")
	}
	if spiders.HostKey(next.URL) != spiders.HostKey(req.URL) {
		next.Headers = without(next.Headers, "Authorization", "Cookie", "Proxy-Authorization")
	}
	same, _ := spiders.CanonicalURL(req.URL)
	if c, err := spiders.CanonicalURL(next.URL); err == nil && c == same {
		next.DontFilter = true
	}
	return &next, nil
}

// without returns h less the named headers (h itself when it has none of them).
func without(h map[string]string, names ...string) map[string]string {
	var out map[string]string
	for k := range h {
		for _, n := range names {
			if strings.EqualFold(k, n) {
				if out == nil {
					out = make(map[string]string, len(h))
					for k2, v := range h {
						out[k2] = v
					}
				}
				delete(out, k)
			}
		}
	}
	if out == nil {
		return h
	}
	return out
}
