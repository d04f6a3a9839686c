package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/storage"
	"github.com/chromedp/chromedp"

	"github.com/streamcrawl/streamcrawl/spiders"
)

// Job is one page to render.
type Job struct {
	// URL is the page (GET).
	URL string
	// UserAgent replaces the browser's own, when set.
	UserAgent string
	// Headers are sent with every request of the page.
	Headers map[string]string
	// Cookies are set in the page's browser context before it loads.
	Cookies []Cookie
	// Page is what to do on the page; nil: the defaults (spiders.Page).
	Page *spiders.Page
	// Dial opens every connection the page makes (required): the fetcher's network
	// guard, through the crawl's proxy when there is one.
	Dial Dialer
	// Navigate is asked before the page's main frame loads a document: the job's URL
	// (first), every redirect hop, every navigation a script starts. An error refuses
	// it (the page stays where it was; for the first document or its redirects, Render
	// returns a *RefusedError). It may wait (its host's turn); calls for later
	// documents may overlap, a newer navigation starting while an older one waits.
	// Nil: every navigation is allowed. Either way a navigation made while a window
	// the page opened is still open (it is being closed) is refused: that window may
	// be the one navigating the page.
	Navigate func(ctx context.Context, u *url.URL, first bool) error
	// Request is asked by the page's proxy before each request the page makes (a
	// plain HTTP request, or a CONNECT tunnel) to addr (host:port), the main frame's
	// documents included; it may wait (the host's politeness), and an error refuses
	// the request (a per-page cap). ctx ends with the request or the page. The
	// function it returns is called when the request is over (its answer passed on,
	// the tunnel closed). Nil: every request goes at once.
	Request func(ctx context.Context, addr string) (func(), error)
}

// Cookie is a cookie and the URL that set it (or that it is set for).
type Cookie struct {
	// From is the URL the cookie belongs to: its host when the cookie has no Domain.
	From *url.URL
	// Cookie is the cookie; a Domain makes it a domain cookie, none a host-only one.
	*http.Cookie
}

// Result is a rendered page.
type Result struct {
	// URL is where the page ended (after redirects and script navigations).
	URL string
	// Status and Headers are the main document's (the last one the main frame
	// loaded).
	Status  int
	Headers http.Header
	// HTML is the DOM after the wait conditions and actions, serialised (UTF-8).
	HTML []byte
	// Cookies are the cookies of the page's browser context when it was done.
	Cookies []Cookie
	// Traffic is what the page's requests did, as its proxy saw them.
	Traffic Traffic
	// BlockedKinds counts the requests Page.Block refused.
	BlockedKinds int64
	// Refused counts the navigations Navigate refused after the page had loaded (a
	// script's redirect out of scope).
	Refused int64
	// IdleTimeouts counts network-idle waits that gave up (a page that never stops
	// loading).
	IdleTimeouts int64
	// BudgetCuts counts the waits (selector, ms) and scrolls cut short because they
	// took half the time the page had left: the page is taken as it was then.
	BudgetCuts int64
	// Popups counts the windows the page opened (window.open, target=_blank), each
	// closed as soon as it was seen.
	Popups int64
	// Browser names the browser ("HeadlessChrome/156.0.0.0").
	Browser string
}

// RefusedError is returned when the page's first document or one of its redirects
// leads where Job.Navigate refuses.
type RefusedError struct {
	// URL is the refused document.
	URL string
	// Err is Navigate's answer.
	Err error
}

// Error says which navigation was refused and why.
func (e *RefusedError) Error() string {
	return "browser: navigation to " + e.URL + " refused: " + e.Err.Error()
}

// Unwrap returns Navigate's answer.
func (e *RefusedError) Unwrap() error { return e.Err }

// Render loads job's page in a tab of one of the pool's browsers, waits and acts as
// its Page says, and returns the DOM. Each tab has a browser context of its own (its
// own cookies, cache and storage) behind a page proxy of its own; pages take turns in
// a tab, which is cleared between them (cookies and the page's storage; the HTTP cache
// stays, as in a browser). Every window a page opens is closed as soon as it is seen,
// and its tab is then closed after it rather than reused. ctx bounds the whole page
// (the fetcher gives it the download timeout). When the browser dies meanwhile, the
// error wraps ErrBrowserLost.
func (p *Pool) Render(ctx context.Context, job Job) (*Result, error) {
	if job.Dial == nil {
		return nil, errors.New("browser: a job needs a dialer")
	}
	u, err := url.Parse(job.URL)
	if err != nil {
		return nil, fmt.Errorf("browser: %w", err)
	}
	if job.Navigate != nil {
		if err := job.Navigate(ctx, u, true); err != nil {
			return nil, &RefusedError{URL: job.URL, Err: err}
		}
	}
	b, err := p.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer p.release(b)
	t, err := p.takeTab(b)
	var res *Result
	if err == nil {
		res, err = p.render(ctx, t, job)
		p.putTab(b, t, err == nil)
	}
	if err != nil && b.ctx.Err() != nil && ctx.Err() == nil {
		p.mu.Lock()
		closed := p.closed
		p.mu.Unlock()
		if closed {
			return nil, ErrClosed
		}
		p.lost.Add(1)
		return nil, fmt.Errorf("%w (%s): %w", ErrBrowserLost, job.URL, p.lostFor(b, err))
	}
	return res, err
}

// pageRun is one page's state while it renders in a tab.
type pageRun struct {
	pool    *Pool
	tab     *tab
	job     Job
	ctx     context.Context // the tab's, bounded by the caller's
	blocked map[network.ResourceType]bool

	deadline time.Time // the caller's; zero: none

	blockedKinds, refusedLater, idleTimeouts, popups, budgetCuts atomic.Int64
	mu                                                           sync.Mutex
	refused                                                      error // of the first document or a redirect of it
	loaded                                                       bool  // the first document answered
}

func (p *Pool) render(ctx context.Context, t *tab, job Job) (*Result, error) {
	pctx, pcancel := context.WithCancelCause(t.ctx)
	defer pcancel(nil)
	defer context.AfterFunc(ctx, func() { pcancel(context.Cause(ctx)) })()
	r := &pageRun{pool: p, tab: t, job: job, ctx: pctx, blocked: map[network.ResourceType]bool{}}
	r.deadline, _ = ctx.Deadline()
	for _, k := range job.Page.Blocked() {
		r.blocked[resourceTypes[k]] = true
	}
	t.proxy.begin(job.Dial, job.Request)
	t.net.reset()
	t.run.Store(r)
	defer t.run.Store(nil)
	if err := r.setup(); err != nil {
		return nil, p.pageErr(ctx, pctx, "set the tab up", err)
	}
	resp, err := chromedp.Run(pctx, chromedp.NavigateResponse(job.URL))
	r.mu.Lock()
	refused := r.refused
	r.mu.Unlock()
	if refused != nil {
		return nil, refused
	}
	if err != nil {
		if dl := r.download(); dl != nil && ctx.Err() == nil {
			return nil, dl
		}
		return nil, p.pageErr(ctx, pctx, "load "+job.URL, err)
	}
	r.mu.Lock()
	r.loaded = true // from now on a refused navigation leaves the page where it is
	r.mu.Unlock()
	res := &Result{Browser: t.b.product}
	if err := r.behave(res); err != nil {
		return nil, p.pageErr(ctx, pctx, "on "+job.URL, err)
	}
	if urls := t.net.historyURLs(); len(urls) > 0 {
		if _, err := chromedp.Run(pctx, chromedp.Evaluate[bool](historyLinksJS(urls))); err != nil {
			return nil, p.pageErr(ctx, pctx, "add the history links of "+job.URL, err)
		}
	}
	if _, err := t.closeOthers(pctx); err != nil {
		return nil, p.pageErr(ctx, pctx, "close the windows "+job.URL+" opened", err)
	}
	html, err := chromedp.Run(pctx, chromedp.Evaluate[string](serializeJS))
	if err != nil {
		return nil, p.pageErr(ctx, pctx, "read the DOM of "+job.URL, err)
	}
	res.HTML = []byte(html)
	doc := t.net.lastDocument()
	if doc == nil {
		doc = resp
	}
	res.URL, res.Status, res.Headers = doc.URL, int(doc.Status), headersOf(doc.Headers)
	cookies, err := chromedp.CallBrowser(pctx, storage.GetCookies, storage.GetCookiesParams{BrowserContextID: t.bc})
	if err != nil {
		return nil, p.pageErr(ctx, pctx, "read the cookies of "+job.URL, err)
	}
	res.Cookies = cookiesOut(cookies.Cookies)
	if err := t.clear(pctx, doc.URL); err != nil {
		return nil, p.pageErr(ctx, pctx, "clear the tab after "+job.URL, err)
	}
	res.Traffic, res.BlockedKinds, res.Refused = t.proxy.end(), r.blockedKinds.Load(), r.refusedLater.Load()
	if res.Traffic.Refused > 0 {
		t.flooded.Store(true) // a page past its cap may be sending still (see reusable)
	}
	res.IdleTimeouts, res.Popups, res.BudgetCuts = r.idleTimeouts.Load(), r.popups.Load(), r.budgetCuts.Load()
	return res, nil
}

// pageErr says why a step failed: the caller's context (its deadline: the page took
// too long), else the step's error.
func (p *Pool) pageErr(ctx, pctx context.Context, step string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("browser: %s: %w", step, context.Cause(ctx))
	}
	if cause := context.Cause(pctx); cause != nil && !errors.Is(err, cause) {
		return fmt.Errorf("browser: %s: %w (%v)", step, err, cause)
	}
	return fmt.Errorf("browser: %s: %w", step, err)
}

// setup prepares the tab for the page: interception of documents and blocked kinds,
// user agent, headers, cookies.
func (r *pageRun) setup() error {
	t := r.tab
	patterns := []*fetch.RequestPattern{{ResourceType: network.ResourceTypeDocument}, {URLPattern: "*/favicon.ico"}}
	for k := range r.blocked {
		patterns = append(patterns, &fetch.RequestPattern{ResourceType: k})
	}
	if _, err := chromedp.Call(r.ctx, fetch.Enable, fetch.EnableParams{Patterns: patterns}); err != nil {
		return err
	}
	if r.job.UserAgent != t.ua {
		if _, err := chromedp.Call(r.ctx, emulation.SetUserAgentOverride, emulation.SetUserAgentOverrideParams{UserAgent: r.job.UserAgent}); err != nil {
			return err
		}
		t.ua = r.job.UserAgent
	}
	if len(r.job.Headers) > 0 || t.headers {
		h := network.Headers{}
		for k, v := range r.job.Headers {
			h[k] = v
		}
		if _, err := chromedp.Call(r.ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: h}); err != nil {
			return err
		}
		t.headers = len(h) > 0
	}
	if len(r.job.Cookies) > 0 {
		if _, err := chromedp.CallBrowser(r.ctx, storage.SetCookies, storage.SetCookiesParams{Cookies: cookiesIn(r.job.Cookies), BrowserContextID: t.bc}); err != nil {
			return err
		}
	}
	return nil
}

// paused answers a paused request of the page: a document of the main frame goes where
// Navigate allows it, a blocked kind is refused, anything else goes on.
func (r *pageRun) paused(ev fetch.EventRequestPaused) {
	t := r.tab
	if ev.ResourceType != network.ResourceTypeDocument {
		if r.blocked[ev.ResourceType] || strings.HasSuffix(ev.Request.URL, "/favicon.ico") {
			r.blockedKinds.Add(1)
			t.fail(ev.RequestID)
		} else {
			t.cont(ev.RequestID)
		}
		return
	}
	if ev.FrameID != t.main {
		t.cont(ev.RequestID) // a frame's document: loaded through the page proxy like any resource
		return
	}
	r.mu.Lock()
	first := !r.loaded && ev.RedirectedRequestID == "" && ev.Request.URL == r.job.URL
	r.mu.Unlock()
	if !first && ev.RedirectedRequestID == "" && !t.net.hasCommitted() {
		// Not the page's URL nor a redirect of it, before the page's document replaced
		// the last page's: the last page's script navigating (the tab it ran in is
		// reused). The page is not taken: it may be the document that navigation
		// brings.
		r.refuse(ev, errForeignNavigation)
		return
	}
	if !first && t.popupOpen() {
		// A window the page opened may be the one navigating it (through its opener):
		// the page's document is the one it loaded, never one another window chose.
		r.refuse(ev, errPopupNavigation)
		return
	}
	if first || r.job.Navigate == nil {
		t.cont(ev.RequestID)
		return
	}
	// Navigate may wait for the host's turn: the tab's other paused requests go on.
	go func() {
		u, err := url.Parse(ev.Request.URL)
		if err == nil {
			err = r.job.Navigate(r.ctx, u, false)
		}
		if err != nil {
			r.refuse(ev, err)
			return
		}
		t.cont(ev.RequestID)
	}()
}

// errPopupNavigation refuses a navigation of the page while a window it opened is open.
var errPopupNavigation = errors.New("browser: a navigation while a window the page opened is open")

// errForeignNavigation refuses a navigation the page did not make.
var errForeignNavigation = errors.New("browser: a navigation the page did not make (the tab's last page)")

// refuse fails a main-frame document Navigate refused. Before the page loaded (the
// first document's redirects) the whole page is refused; later the page stays where it
// was.
func (r *pageRun) refuse(ev fetch.EventRequestPaused, err error) {
	r.mu.Lock()
	loaded := r.loaded
	if !loaded && r.refused == nil {
		r.refused = &RefusedError{URL: ev.Request.URL, Err: err}
	}
	r.mu.Unlock()
	if !loaded {
		r.tab.fail(ev.RequestID)
		return
	}
	r.refusedLater.Add(1)
	// A 204 to a navigation leaves the page where it is (a failed one would show an
	// error page instead).
	chromedp.Call(r.tab.ctx, fetch.FulfillRequest, fetch.FulfillRequestParams{RequestID: ev.RequestID, ResponseCode: http.StatusNoContent}) //nolint:errcheck // a closed tab drops it
}

// HistoryAttr marks the hidden element holding, as links, the URLs a page's script
// put in the history (pushState, replaceState): <div hidden data-streamcrawl="history">.
// Follow rules see them like any link, so they pass scope and robots.txt as links do.
const HistoryAttr = "data-streamcrawl"

// historyLinksJS adds urls to the page as links in a hidden element.
func historyLinksJS(urls []string) string {
	list, _ := json.Marshal(urls) // strings always marshal
	return `(urls => { const d = document.createElement("div"); d.hidden = true; d.setAttribute("` + HistoryAttr + `", "history");
	for (const u of urls) { const a = document.createElement("a"); a.href = u; d.appendChild(a); }
	(document.body || document.documentElement).appendChild(d); return true })(` + string(list) + `)`
}

// serializeJS returns the page's DOM as HTML: its doctype and root element.
const serializeJS = `(document.doctype ? new XMLSerializer().serializeToString(document.doctype) + "\n" : "") + document.documentElement.outerHTML`

// resourceTypes maps spiders.BlockKinds to the browser's resource types.
var resourceTypes = map[string]network.ResourceType{
	"image": network.ResourceTypeImage, "font": network.ResourceTypeFont, "media": network.ResourceTypeMedia,
	"stylesheet": network.ResourceTypeStylesheet, "script": network.ResourceTypeScript, "xhr": network.ResourceTypeXHR,
	"fetch": network.ResourceTypeFetch, "websocket": network.ResourceTypeWebSocket, "eventsource": network.ResourceTypeEventSource,
	"manifest": network.ResourceTypeManifest, "texttrack": network.ResourceTypeTextTrack, "ping": network.ResourceTypePing,
	"prefetch": network.ResourceTypePrefetch, "other": network.ResourceTypeOther,
}

// headersOf converts the protocol's headers (values may hold several lines).
func headersOf(h network.Headers) http.Header {
	out := http.Header{}
	for k, v := range h {
		s, ok := v.(string)
		if !ok {
			s = fmt.Sprint(v)
		}
		for _, line := range splitLines(s) {
			out.Add(k, line)
		}
	}
	return out
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// sameSites pairs the SameSite values of net/http and of the protocol.
var sameSites = []struct {
	http http.SameSite
	cdp  network.CookieSameSite
}{{http.SameSiteStrictMode, network.CookieSameSiteStrict}, {http.SameSiteLaxMode, network.CookieSameSiteLax},
	{http.SameSiteNoneMode, network.CookieSameSiteNone}}

// cookiesIn converts cookies for Storage.setCookies.
func cookiesIn(cs []Cookie) []*network.CookieParam {
	out := make([]*network.CookieParam, 0, len(cs))
	for _, c := range cs {
		p := &network.CookieParam{Name: c.Name, Value: c.Value, Domain: c.Domain, Path: c.Path,
			Secure: c.Secure, HTTPOnly: c.HttpOnly}
		if c.From != nil {
			p.URL = (&url.URL{Scheme: c.From.Scheme, Host: c.From.Host, Path: c.From.Path}).String()
		}
		if !c.Expires.IsZero() {
			p.Expires = cdp.TimeSinceEpoch(float64(c.Expires.UnixNano()) / 1e9)
		}
		for _, m := range sameSites {
			if c.SameSite == m.http {
				p.SameSite = m.cdp
			}
		}
		out = append(out, p)
	}
	return out
}

// cookiesOut converts the cookies of a browser context.
func cookiesOut(cs []*network.Cookie) []Cookie {
	out := make([]Cookie, 0, len(cs))
	for _, c := range cs {
		host, domain := c.Domain, ""
		if len(host) > 0 && host[0] == '.' {
			host, domain = host[1:], host[1:]
		}
		scheme := "http"
		if c.Secure {
			scheme = "https"
		}
		hc := &http.Cookie{Name: c.Name, Value: c.Value, Domain: domain, Path: c.Path, Secure: c.Secure, HttpOnly: c.HTTPOnly}
		if !c.Session && c.Expires > 0 {
			hc.Expires = cdpTime(c.Expires)
		}
		for _, m := range sameSites {
			if c.SameSite == m.cdp {
				hc.SameSite = m.http
			}
		}
		from := &url.URL{Scheme: scheme, Host: host, Path: c.Path}
		if c.SourcePort > 0 && c.SourcePort != 80 && c.SourcePort != 443 {
			from.Host = net.JoinHostPort(host, strconv.FormatInt(c.SourcePort, 10))
		}
		out = append(out, Cookie{From: from, Cookie: hc})
	}
	return out
}
