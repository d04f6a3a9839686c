package fetch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/handlers/fetch/browser"
	"github.com/streamcrawl/streamcrawl/handlers/internal/conf"
	"github.com/streamcrawl/streamcrawl/handlers/metrics"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
	"github.com/streamcrawl/streamcrawl/streams/hostgate"
)

// Config configures a Fetcher.
type Config struct {
	// Settings of the spider: timeouts, concurrency, per-host politeness, robots.txt,
	// cookies, proxies, body size and budget, retries. Unset fields take the defaults of
	// spiders.Settings.SetDefaults.
	Settings spiders.Settings
	// Frontier is the crawl's frontier, which keeps the per-host politeness state:
	// every fetch gives its host's slot back there and tells it the back-off a 429 or
	// 503 asks for. Required.
	Frontier *frontier.Frontier
	// Client and Layout hold what the fetchers of a crawl share in Redis: the
	// robots.txt cache, the cookie jar, the conditional-request validators and the
	// login lock. Client is required when the spider obeys robots.txt (the default);
	// without it cookies are kept per process and revisits are not conditional.
	Client redis.UniversalClient
	// Layout is the crawl's layout in Client: where those keys are.
	Layout streams.Layout
	// Scope is checked again on every redirect hop. Default nil: any http(s) target.
	Scope *spiders.Scope
	// FollowFilter is the spider's: checked on the redirect hops of found links.
	// Default nil: none.
	FollowFilter func(*url.URL) bool
	// RobotsRetry is how long a host whose robots.txt answered 5xx (or could not be
	// fetched) stays disallowed before robots.txt is fetched again, doubled after each
	// try; after the spider's robots_unreachable_tries the host's requests are dropped.
	// Default DefaultRobotsRetry.
	RobotsRetry time.Duration
	// RetryBase is the delay before a failed fetch's first retry, doubled for each
	// next one. Default DefaultRetryBase.
	RetryBase time.Duration
	// Counters receives the fetch figures (pages_fetched, status_404, retries, ...).
	// Default nil: not counted.
	Counters *streams.Counters
	// HostStats receives per-host request counts, times and failures (the crawl's
	// windowed per-host figures, see streams.HostStats). Default nil: not kept.
	HostStats *streams.HostStats
	// Metrics times each HTTP round trip. Default nil: not timed.
	Metrics *metrics.Metrics
	// Logger receives what the fetcher has to say. Default nil: no-op.
	Logger *zap.Logger
	// Browsers renders the pages that ask for it (browser.go). Default nil: a page
	// that asks is a dead letter. The fetcher does not close it.
	Browsers *browser.Pool
	// Render and Page are the spider's: how a request that does not say is fetched,
	// and what the browser does on a page whose request has no Page.
	Render spiders.Render
	Page   *spiders.Page
	// Extract runs the spider's callback on a response: render: auto compares what it
	// yields from a page fetched over HTTP and rendered (adaptive.go). Default nil:
	// the pages differ, and every type goes to the browser.
	Extract func(context.Context, *spiders.Response) (*spiders.Output, error)
	// AutoSamples and AutoCheckEvery tune render: auto. Defaults DefaultAutoSamples
	// and DefaultAutoCheckEvery.
	AutoSamples, AutoCheckEvery int
	// SharedHosts says which hosts (spiders.HostKey) other crawls reach too: their
	// requests pass the host's fleet-wide gate in Client (fleetgate.go), so that the
	// crawls keep one pace there. Default nil: no host is shared, and nothing is paid.
	SharedHosts func(host string) bool
}

// setDefaults fills the unset fields.
func (c *Config) setDefaults() {
	c.Settings.SetDefaults()
	conf.Positive(&c.RetryBase, DefaultRetryBase)
	conf.Positive(&c.RobotsRetry, DefaultRobotsRetry)
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
}

// Validate reports a Config New cannot use.
func (c *Config) Validate() error {
	if err := c.Settings.Validate(); err != nil {
		return err
	}
	if c.Frontier == nil {
		return errors.New("fetch: a fetcher needs the hosts' politeness state")
	}
	if c.Settings.RobotsObeyed() && c.Client == nil {
		return errors.New("fetch: obeying robots.txt needs a redis client")
	}
	if c.SharedHosts != nil && c.Client == nil {
		return errors.New("fetch: sharing hosts' politeness with other crawls needs a redis client")
	}
	if (c.Render == spiders.RenderOn || c.Render == spiders.RenderAuto) && c.Browsers == nil {
		return fmt.Errorf("fetch: the spider renders its pages (render: %s): %w", c.Render, errNoBrowser)
	}
	return nil
}

// Fetcher turns a crawl's requests into responses under the crawl's rules: the network
// guard on every connection, scope and robots.txt on every redirect hop, the host's
// politeness turn, cookies, proxies, the body budget and retry delays. Do says what
// became of each request. A Fetcher is safe for concurrent use.
//
// The round trip itself is what one kind of fetcher does its own way (roundTripper):
// over HTTP (http.go), or in a browser (browser.go) for requests that ask to be
// rendered.
type Fetcher struct {
	*shared
	hosts *frontier.Frontier
	rdb   redis.UniversalClient
	keys  streams.Keys // the crawl's global keys (the login lock)
	http  *httpFetch   // robots.txt and the login form go over HTTP whatever fetches pages
	trip  roundTripper
	base  time.Duration

	browser  *browserFetch  // nil without Config.Browsers
	render   spiders.Render // the spider's
	adaptive *adaptive      // render: auto; nil without a browser or Redis (then: the browser)
}

// shared is what every kind of fetcher obeys and uses.
type shared struct {
	settings spiders.Settings
	scope    *spiders.Scope
	follows  func(*url.URL) bool // the spider's FollowFilter, nil: none
	guard    *netGuard           // nil when private networks are allowed
	proxies  *proxyPool          // nil without settings.proxies
	cookies  *cookieStore
	robots   *robots // nil when robots.txt is not obeyed
	budget   *bodyBudget
	gate     *fleetGate // nil: no host is shared with other crawls
	counters *streams.Counters
	log      *zap.Logger
}

func (s *shared) count(field string, n int64) {
	if s.counters != nil {
		s.counters.Add(field, n)
	}
}

// roundTripper is one request's round trip, the step a kind of fetcher does its own
// way under the rules the Fetcher shares between kinds. It returns the response with
// the budget ticket that holds its body; or no response and the reason it is not passed
// on (a final HTTP status, a refused redirect; counted); or an error: a
// *retryableError, errBlockedAddress, or one wrapping streams.ErrPoison.
type roundTripper interface {
	roundTrip(ctx context.Context, req *spiders.Request) (*spiders.Response, *bodyTicket, string, error)
}

// New returns the Fetcher of cfg.
func New(cfg Config) (*Fetcher, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := cfg.Settings
	budget := int64(s.BodyBudget)
	if budget == 0 {
		budget = defaultBodyBudget()
	}
	sh := &shared{settings: s, scope: cfg.Scope, follows: cfg.FollowFilter, guard: newGuard(s), proxies: newProxyPool(s),
		cookies: newCookieStore(s.Cookies, cfg.Client, cfg.Layout, cfg.Counters), budget: newBodyBudget(budget),
		counters: cfg.Counters, log: cfg.Logger}
	if cfg.SharedHosts != nil {
		g, err := hostgate.New(cfg.Client, hostgate.Config{})
		if err != nil {
			return nil, err
		}
		sh.gate = newFleetGate(g, cfg.SharedHosts)
	}
	h := newHTTPFetch(sh, cfg)
	if s.RobotsObeyed() {
		sh.robots = newRobots(cfg.Client, cfg.Layout, robotsClient(h.client), robotsConfig{agent: s.UserAgent, retry: cfg.RobotsRetry,
			tries: s.RobotsUnreachableTries, maxDelay: s.MaxCrawlDelay, timeout: s.DownloadTimeout}, cfg.Counters, cfg.Logger)
		if sh.gate != nil {
			sh.robots.gate = sh.robotsGate
		}
		sh.robots.via = func(ctx context.Context, hreq *http.Request) (*http.Request, func(*http.Response, error), error) {
			return h.viaProxy(ctx, &spiders.Request{URL: hreq.URL.String()}, hreq)
		}
	}
	f := &Fetcher{shared: sh, hosts: cfg.Frontier, rdb: cfg.Client, keys: cfg.Layout.Global, http: h, trip: h, base: cfg.RetryBase,
		render: cfg.Render}
	if cfg.Browsers != nil {
		f.browser = newBrowserFetch(sh, cfg)
		f.browser.http = h
		if cfg.Client != nil {
			f.adaptive = newAdaptive(f, cfg)
		}
	}
	return f, nil
}

// Close closes the fetcher's idle HTTP connections. A process that runs crawl after
// crawl (a fleet worker) makes a fetcher per run: without this, each ended run's
// keep-alive connections, with their goroutines and buffers, stay until the transport's
// idle timeout.
func (f *Fetcher) Close(context.Context) error {
	if f.http.tr != nil {
		f.http.tr.CloseIdleConnections()
	}
	return nil
}

// Delivery says how a request reached the fetcher: the requests-stream entry it came in
// (a host with a concurrency limit has its slot leased for that entry) and whether it
// was delivered before.
type Delivery struct {
	// ID is the entry's stream ID; "" when the request did not come from the stream.
	ID string
	// Redelivered is set when the entry was delivered before (its fetcher died, or its
	// fetch failed).
	Redelivered bool
	// Owner is the consumer holding the entry (streams.Holder): the frontier gives the
	// request's slot back, or requeues it, only while the entry is still its own. ""
	// skips that check.
	Owner string
}

// Outcome is what became of a request: what the stage that fetched it must do.
type Outcome int

// The outcomes of Do.
const (
	// Publish: Result.Response goes on to the parse stage.
	Publish Outcome = iota
	// Retry: Result.Request (its Retries and LastError updated) is to be fetched again
	// at Result.At.
	Retry
	// Drop: nothing goes on and nothing is owed; Result.Reason says why (a final HTTP
	// status, robots.txt, a refused redirect, a private address, or the request went
	// back to its host's queue).
	Drop
	// Dead: the request can never succeed; Result.Err (wrapping streams.ErrPoison) is
	// its dead letter's error.
	Dead
	// Redirect: the request was answered with a redirect; Result.Request is its next
	// hop, to be queued through the frontier like a link (deduplicated, scoped, polite).
	Redirect
)

// Reasons a Result of Do gives for a Drop besides the final HTTP answers (http_error,
// not_modified, redirect_not_followed, redirect_refused_<reason>, body_not_text).
const (
	// DropPrivateAddress: the network guard refused the host's address.
	DropPrivateAddress = "private_address"
	// DropRobots: robots.txt disallows the URL.
	DropRobots = "robots_disallowed"
	// DropRequeued: the request went back to its host's queue (its slot was lost,
	// robots.txt is being fetched elsewhere, or fetching it took the host's turn).
	DropRequeued = "requeued"
	// DropRobotsUnreachable starts the error of the dead letters of a host whose
	// robots.txt stayed unavailable (5xx, no answer, TLS failure) for every try of
	// robots_unreachable_tries, and names their counter. Do returns such a request as
	// Dead, and its host's waiting requests are dead-lettered with it.
	DropRobotsUnreachable = "robots_unreachable"
)

// Result is what became of one request (see Outcome).
type Result struct {
	// Outcome says what the stage does with the request.
	Outcome Outcome
	// Response is the fetched response (Publish). Its Body is valid until Release.
	Response *spiders.Response
	// Request is the request to fetch again (Retry), or the redirect's next hop
	// (Redirect).
	Request *spiders.Request
	// At is when Request is due (Retry).
	At time.Time
	// Reason says why nothing goes on (Drop).
	Reason string
	// Err is the dead letter's error (Dead).
	Err error
	// Status is the HTTP status of the last answer when nothing goes on (a final 4xx
	// Drop, a Dead after the retries of a 5xx or an unsolicited 304) or of a Redirect;
	// 0 when there was none (a network error, robots.txt, the guard).
	Status int

	release func()
}

// Release gives the response body's buffer and budget back: call it once the response
// is encoded. Safe on any Result, and more than once.
func (r Result) Release() {
	if r.release != nil {
		r.release()
	}
}

// Do fetches req, which came as d says, and returns what became of it.
//
// The frontier hands a request out only when its host may start one (see
// frontier.Frontier.Finish), so Do never waits for politeness; it gives the host's slot back when
// the fetch is over (see turn). When this process fetched the host's robots.txt for the
// request, that fetch was the host's turn: the page goes back to its host's queue, to be
// fetched after the host's delay. A redirect is not followed here: its target is the
// Redirect outcome's request (redirects.go). Network errors, timeouts, 408, 429 and 5xx answers are
// retried with exponential backoff and jitter (or the server's Retry-After), up to
// max_retries; other 4xx answers are final. An error means Do could not finish (Redis
// did not answer): the request must come again, and its slot stays leased for it.
func (f *Fetcher) Do(ctx context.Context, req *spiders.Request, d Delivery) (Result, error) {
	u, err := url.Parse(req.URL)
	if err != nil {
		return dead(fmt.Errorf("%w: fetch: %w", streams.ErrPoison, err)), nil
	}
	if err := streams.Held(ctx); err != nil {
		return Result{}, err // another fetcher has it now (see fence.go)
	}
	t := f.newTurn(req, d)
	if lost, err := t.slotLost(ctx, d); lost || err != nil {
		return drop(DropRequeued), err
	}
	ctx = withSendCheck(ctx, t.beforeSend)
	if f.robots != nil {
		v, err := f.robots.check(ctx, u)
		if err != nil {
			return Result{}, err // the slot stays leased: the redelivery uses it
		}
		if reason, err := t.robots(ctx, v); reason != "" || err != nil {
			if reason == DropRobotsUnreachable && err == nil {
				return dead(robotsUnreachableError(v)), nil
			}
			return drop(reason), err
		}
	}
	trip, err := f.tripFor(ctx, req)
	switch {
	case errors.Is(err, streams.ErrPoison):
		t.finish(ctx, frontier.Finish{}) // no request was made
		return dead(err), nil
	case err != nil:
		return Result{}, err // the slot stays leased: the redelivery uses it
	}
	pass, requeued, err := t.enterGate(ctx)
	switch {
	case requeued && err == nil:
		return drop(DropRequeued), nil
	case err != nil:
		return Result{}, err // the slot stays leased: the redelivery uses it
	}
	ctx, started := traceStart(ctx)
	res, body, reason, err := trip.roundTrip(ctx, req)
	pass.leave(ctx, f.log, gateBackoff(err))
	if unsent(err) {
		return t.unsent(ctx, err) // nothing left for the host
	}
	if errors.Is(err, errSendUnconfirmed) {
		return Result{}, err // not sent; the slot stays leased: the redelivery uses it
	}
	if err == nil && reason == "" {
		f.spendBytes(ctx, t.host, res) // before the slot goes back: the host's next page waits for it
	}
	var rerr *retryableError
	t.fetched(ctx, started(), errors.As(err, &rerr) && rerr.slowDown(), rerr)
	switch {
	case errors.Is(err, errBlockedAddress):
		f.count("dropped_private_address", 1)
		f.log.Info("dropped: not a public address", zap.String("url", spiders.RedactedURL(req.URL)), zap.Error(err))
		return drop(DropPrivateAddress), nil
	case rerr != nil:
		return f.retry(req, rerr), nil
	case err != nil:
		f.count("fetch_errors_final", 1)
		return dead(err), nil
	case res == nil || reason != "":
		r := drop(reason)
		if res != nil {
			r.Status = res.Status // a final answer's status, for the revisit of a gone page
		}
		return r, nil
	case isRedirect(res.Status, res.Headers):
		r := f.redirect(req, res)
		r.Status = res.Status
		return r, nil
	}
	return Result{Outcome: Publish, Response: res, release: body.release}, nil
}

// retry returns req's next attempt, or gives up on it (a dead letter with the last
// error) after max_retries.
func (f *Fetcher) retry(req *spiders.Request, rerr *retryableError) Result {
	if req.Retries >= f.settings.Retries() {
		f.count("retries_exhausted", 1)
		r := dead(fmt.Errorf("%w: fetch: gave up on %s after %d retries: %w", streams.ErrPoison, spiders.RedactedURL(req.URL), req.Retries, rerr.err))
		r.Status = rerr.status
		return r
	}
	next := *req
	next.Retries++
	next.LastError = rerr.err.Error()
	now := time.Now()
	return Result{Outcome: Retry, Request: &next, At: now.Add(retryDelay(f.base, next.Retries, rerr.retryAfter, now))}
}

func drop(reason string) Result { return Result{Outcome: Drop, Reason: reason} }

// dead is the Dead result of err, which wraps streams.ErrPoison (or is made to).
func dead(err error) Result {
	if !errors.Is(err, streams.ErrPoison) {
		err = fmt.Errorf("%w: %w", streams.ErrPoison, err)
	}
	return Result{Outcome: Dead, Err: err}
}
