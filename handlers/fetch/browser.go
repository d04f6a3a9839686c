package fetch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/handlers/fetch/browser"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
)

// errNoBrowser is the dead letter of a page that asks to be rendered in a fetch
// process without a browser.
var errNoBrowser = errors.New("fetch: the page asks to be rendered and this fetch process has no browser (give it --browser-path or --browser-url, or install chromium)")

// browserFetch is the browser fetcher: a page loaded in a tab of the process's pool,
// every request it makes through the guard (and the request's proxy), its
// navigations checked like redirects, the crawl's cookies in and out, and its DOM
// passed on as the response body.
type browserFetch struct {
	*shared
	pool      *browser.Pool
	page      *spiders.Page      // the spider's, for requests without one
	dial      browser.Dialer     // through the guard
	rawDial   browser.Dialer     // the guard's dialer as it is: proxies dial through it
	hostStats *streams.HostStats // nil: not kept
	pace      *hostPacer         // the pages' requests beyond their own turn (browser_pace.go)
	http      roundTripper       // fetches what the browser takes for a download
}

// newBrowserFetch returns the browser fetcher of cfg, sharing sh's rules.
func newBrowserFetch(sh *shared, cfg Config) *browserFetch {
	d := net.Dialer{Timeout: sh.settings.ConnectTimeout}
	raw := d.DialContext
	if sh.guard != nil {
		raw = sh.guard.dialer(d)
	}
	return &browserFetch{shared: sh, pool: cfg.Browsers, page: cfg.Page, dial: guardedDial(sh.settings), rawDial: raw,
		hostStats: cfg.HostStats, pace: newHostPacer(cfg.Frontier, sh.log)}
}

// renderMode returns how req is fetched: its mode (its own, its meta's, the
// spider's), RenderOff for a request that is not a GET or is for a built-in callback
// (sitemaps, robots.txt). An invalid meta "render" is an error.
func (f *Fetcher) renderMode(req *spiders.Request) (spiders.Render, error) {
	mode, err := req.RenderMode(f.render)
	if err != nil {
		return "", err
	}
	switch {
	case mode == spiders.RenderOff:
		return mode, nil
	case req.HTTPMethod() != http.MethodGet:
		f.count("render_skipped_method", 1) // a browser navigates with GET
		return spiders.RenderOff, nil
	case req.Callback == spiders.SitemapCallback || req.Callback == spiders.RobotsSitemapsCallback:
		return spiders.RenderOff, nil
	}
	return mode, nil
}

// tripFor returns the round trip of req: over HTTP, in a browser, or as the
// adaptive renderer decides.
func (f *Fetcher) tripFor(ctx context.Context, req *spiders.Request) (roundTripper, error) {
	mode, err := f.renderMode(req)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: fetch: %w", streams.ErrPoison, err)
	case mode == spiders.RenderOff:
		return f.trip, nil
	case f.browser == nil:
		return nil, fmt.Errorf("%w: %w", streams.ErrPoison, errNoBrowser)
	case mode == spiders.RenderAuto && f.adaptive != nil:
		return f.adaptive.tripFor(ctx, req)
	}
	return f.browser, nil
}

// roundTrip renders req (see roundTripper). The DOM is the body (UTF-8 HTML, cut at
// max_body_size); status and headers are the main document's; the Content-Type says
// text/html whatever the document was, since the body is its DOM.
func (b *browserFetch) roundTrip(ctx context.Context, req *spiders.Request) (*spiders.Response, *bodyTicket, string, error) {
	if err := req.Validate(); err != nil {
		return nil, nil, "", fmt.Errorf("%w: fetch: %w", streams.ErrPoison, err)
	}
	u, err := url.Parse(req.URL)
	if err != nil {
		return nil, nil, "", fmt.Errorf("%w: fetch: %w", streams.ErrPoison, err)
	}
	dial, release, err := b.pageDialer(ctx, req)
	if err != nil {
		return nil, nil, "", err
	}
	session := sessionOf(req)
	given, err := b.cookies.forBrowser(ctx, session, u)
	if err != nil {
		release(false)
		return nil, nil, "", &retryableError{err: err}
	}
	job := browser.Job{URL: req.URL, UserAgent: b.settings.UserAgent, Headers: b.headers(req), Cookies: given,
		Page: req.Page, Dial: dial, Navigate: b.navigate(ctx, req), Request: b.subrequests(req)}
	if job.Page == nil {
		job.Page = b.page
	}
	rctx, cancel := context.WithTimeout(ctx, b.settings.DownloadTimeout)
	start := time.Now()
	res, err := b.pool.Render(rctx, job)
	cancel()
	// The proxy failed the page when its tunnel could not be opened.
	release(err != nil && strings.Contains(err.Error(), "ERR_TUNNEL_CONNECTION_FAILED"))
	b.stats(u, start, res, err)
	if unsent(err) {
		return nil, nil, "", err // the page never loaded: see fence.go
	}
	var dl *browser.DownloadError
	if errors.As(err, &dl) {
		// A download (Content-Disposition: attachment) has no page to render: its body
		// is fetched over HTTP, as the HTTP fetcher fetches any document, rather than
		// retried until it is dead-lettered.
		b.count("render_downloads", 1)
		b.log.Info("a rendered URL is a download, fetched over HTTP", zap.String("url", spiders.RedactedURL(req.URL)),
			zap.String("disposition", dl.Headers.Get("Content-Disposition")))
		return b.http.roundTrip(ctx, req)
	}
	if err != nil {
		return b.failed(req, err)
	}
	if err := b.cookies.fromBrowser(context.WithoutCancel(ctx), session, given, res.Cookies); err != nil {
		b.log.Warn("cookies of a rendered page not saved", zap.String("url", spiders.RedactedURL(req.URL)), zap.Error(err))
	}
	b.countPage(req, res)
	if ends, reason, err := b.statusEnds(req, res.Status, res.Headers); ends {
		return nil, nil, reason, err
	}
	body, truncated := res.HTML, false
	if int64(len(body)) > b.settings.MaxBodySize {
		body, truncated = body[:b.settings.MaxBodySize], true
		b.count("bodies_truncated", 1)
	}
	held, err := b.budget.start(ctx, int64(len(body)))
	if err != nil {
		return nil, nil, "", &retryableError{err: fmt.Errorf("fetch: %s: waiting for body budget: %w", req.URL, err)}
	}
	hdr := res.Headers.Clone()
	hdr.Del("Content-Encoding")
	hdr.Del("Content-Length")
	hdr.Set("Content-Type", "text/html; charset=utf-8")
	b.count("pages_fetched", 1)
	b.count("bytes_fetched", int64(len(body)))
	return &spiders.Response{Request: req, URL: res.URL, Status: res.Status, Headers: hdr, Body: body, Truncated: truncated,
		Charset: "utf-8", FetchedAt: time.Now().UTC(), RenderedBy: res.Browser}, held, "", nil
}

// headers are the spider's headers and the request's.
func (b *browserFetch) headers(req *spiders.Request) map[string]string {
	if len(b.settings.Headers) == 0 && len(req.Headers) == 0 {
		return nil
	}
	h := make(map[string]string, len(b.settings.Headers)+len(req.Headers))
	for k, v := range b.settings.Headers {
		h[k] = v
	}
	for k, v := range req.Headers {
		h[k] = v
	}
	return h
}

// failed turns a render's error into the round trip's answer: a refused navigation is
// dropped like a refused redirect, a private address like the HTTP fetcher's, and
// anything else (the browser died, the page took too long, the site did not answer)
// is retried.
func (b *browserFetch) failed(req *spiders.Request, err error) (*spiders.Response, *bodyTicket, string, error) {
	var refused *browser.RefusedError
	var rr *redirectRefused
	switch {
	case errors.Is(err, errBlockedAddress):
		return nil, nil, "", err
	case errors.As(err, &refused) && errors.As(refused.Err, &rr):
		b.count("redirect_refused_"+rr.reason, 1)
		b.log.Info("navigation refused", zap.String("url", req.URL), zap.String("to", rr.target), zap.String("reason", rr.reason))
		return nil, nil, "redirect_refused_" + rr.reason, nil
	case errors.Is(err, browser.ErrBrowserLost):
		b.count("render_browser_lost", 1)
	}
	b.count("render_errors", 1)
	return nil, nil, "", &retryableError{err: fmt.Errorf("fetch: render %s: %w", req.URL, err)}
}

// countPage counts what a rendered page did.
func (b *browserFetch) countPage(req *spiders.Request, res *browser.Result) {
	b.count("pages_rendered", 1)
	b.count("render_subrequests", res.Traffic.Requests)
	if n := res.Traffic.Blocked; n > 0 {
		b.count("render_subrequests_blocked", n)
		b.log.Info("a rendered page tried to reach addresses the guard refuses", zap.String("url", req.URL),
			zap.Int64("blocked", n), zap.Strings("hosts", res.Traffic.BlockedHosts))
	}
	if n := res.BlockedKinds; n > 0 {
		b.count("render_resources_blocked", n)
	}
	if n := res.Refused; n > 0 {
		b.count("render_navigations_refused", n)
	}
	if n := res.IdleTimeouts; n > 0 {
		b.count("render_idle_timeouts", n)
	}
	if n := res.Popups; n > 0 {
		b.count("render_popups_closed", n)
	}
	if n := res.BudgetCuts; n > 0 {
		b.count("render_budget_cuts", n)
	}
}

// stats records the page in the per-host figures, as the HTTP fetcher's transport
// does for a round trip, and each host its requests reached.
func (b *browserFetch) stats(u *url.URL, start time.Time, res *browser.Result, err error) {
	if b.hostStats == nil {
		return
	}
	b.hostStats.Add(spiders.HostKeyOf(u), time.Since(start), err != nil || res.Status >= 500)
}
