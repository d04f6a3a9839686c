package fetch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/streamcrawl/streamcrawl/streams/frontier"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/streamcrawl/streamcrawl/handlers/metrics"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
)

// Fetch is the fetch stage: it turns a request message into a response message.
//
// 2xx (and other non-error) responses go on to the parse stage with their body (decoded,
// cut at the spider's max_body_size and flagged truncated). Network errors, timeouts,
// 408, 429 and 5xx answers are retried: the request goes to the crawl's delayed set with
// exponential backoff and jitter (or the server's Retry-After) and the handler moves on;
// after max_retries it becomes a dead letter with its last error. Other 4xx answers are
// final: counted (status_404, ...) and dropped. A request that can never succeed
// (malformed message, too many redirects) goes to dead letters at once.
type Fetch struct {
	client   *http.Client
	settings spiders.Settings
	scope    *spiders.Scope
	follows  func(*url.URL) bool // the spider's FollowFilter, nil: none
	cookies  *cookieStore
	cond     *validators // nil unless the spider revisits URLs
	guard    *netGuard   // nil when private networks are allowed
	proxies  *proxyPool  // nil without settings.proxies
	delayed  *frontier.Delayed
	hosts    *frontier.Hosts
	robots   *robots
	budget   *bodyBudget
	encode   func(context.Context, *spiders.Response) ([]byte, error)
	base     time.Duration
	counters *streams.Counters
	log      *zap.Logger
	retryLog *zap.Logger // INFO, sampled: a few lines per second at most
}

// FetchConfig configures the fetch stage.
type FetchConfig struct {
	// Settings of the spider.
	Settings spiders.Settings
	// Delayed is where retries wait. Required.
	Delayed *frontier.Delayed
	// Hosts takes back the hosts' slots and learns their back-offs. Required.
	Hosts *frontier.Hosts
	// Client and Layout give robots.txt its shared cache (in each host's partition);
	// needed when the spider obeys robots.txt.
	Client redis.UniversalClient
	Layout frontier.Layout
	// RobotsRetry is how long a host whose robots.txt answered 5xx (or could not be
	// fetched) stays disallowed before robots.txt is fetched again. Default
	// DefaultRobotsRetry.
	RobotsRetry time.Duration
	// Scope is checked again on every redirect hop (nil: any http(s) target).
	Scope *spiders.Scope
	// FollowFilter is the spider's: checked on the redirect hops of found links.
	FollowFilter func(*url.URL) bool
	// RetryBase is the delay before the first retry, doubled for each next one.
	// Default DefaultRetryBase.
	RetryBase time.Duration
	// Counters and Logger may be nil.
	Counters *streams.Counters
	Logger   *zap.Logger
	// Metrics, when set, times each HTTP round trip.
	Metrics *metrics.Metrics
	// HostStats, when set, gets per-host request counts, times and failures (the
	// crawl's frontier.Keys.HostStats hash).
	HostStats *streams.Counters
	// Encode writes a fetched response for the responses stream. Default
	// spiders.MarshalResponse.
	Encode func(context.Context, *spiders.Response) ([]byte, error)
}

// NewFetch returns the fetch stage.
func NewFetch(cfg FetchConfig) (*Fetch, error) {
	s := cfg.Settings
	s.SetDefaults()
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if cfg.Delayed == nil || cfg.Hosts == nil {
		return nil, errors.New("handlers: fetch needs the delayed set and the hosts' politeness state")
	}
	if cfg.RetryBase <= 0 {
		cfg.RetryBase = DefaultRetryBase
	}
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	budget := int64(s.BodyBudget)
	if budget == 0 {
		budget = DefaultBodyBudget()
	}
	f := &Fetch{client: newHTTPClient(s), settings: s, scope: cfg.Scope, follows: cfg.FollowFilter,
		cookies: newCookieStore(s.Cookies, cfg.Client, cfg.Layout), guard: newGuard(s), proxies: newProxyPool(s), delayed: cfg.Delayed, hosts: cfg.Hosts,
		base: cfg.RetryBase, counters: cfg.Counters, log: log, retryLog: sampled(log, 3), budget: newBodyBudget(budget)}
	f.encode = cfg.Encode
	if f.encode == nil {
		f.encode = func(_ context.Context, res *spiders.Response) ([]byte, error) { return spiders.MarshalResponse(res) }
	}
	if cfg.Metrics != nil {
		f.client.Transport = cfg.Metrics.Transport(f.client.Transport)
	}
	if cfg.HostStats != nil {
		f.client.Transport = hostStatsTransport{next: f.client.Transport, counters: cfg.HostStats}
	}
	if s.RobotsObeyed() {
		if cfg.Client == nil {
			return nil, errors.New("handlers: obeying robots.txt needs a redis client")
		}
		f.robots = newRobots(cfg.Client, cfg.Layout, robotsClient(f.client), s.UserAgent, cfg.Counters, log)
		if cfg.RobotsRetry > 0 {
			f.robots.retry = cfg.RobotsRetry
		}
		f.robots.via = func(ctx context.Context, hreq *http.Request) (*http.Request, func(*http.Response, error), error) {
			return f.viaProxy(ctx, &spiders.Request{URL: hreq.URL.String()}, hreq)
		}
	}
	f.client.CheckRedirect = f.checkRedirect
	if s.RevisitAfter > 0 && cfg.Client != nil {
		f.cond = newValidators(cfg.Client, cfg.Layout, s.Capacity)
	}
	return f, nil
}

// Handle fetches the request in msg and returns the response message.
//
// The frontier hands a request out only when its host may start one (see
// frontier.Hosts), so Handle never waits for politeness; it gives the host's slot back
// when the fetch is over (see turn). When this process fetched the host's robots.txt
// for the request, that fetch was the host's turn: the page goes back to its host's
// queue, to be fetched after the host's delay.
func (f *Fetch) Handle(msg *message.Message) ([]*message.Message, error) {
	req, err := spiders.UnmarshalRequest(msg.Payload)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", streams.ErrPoison, err)
	}
	ctx := msg.Context()
	u, err := url.Parse(req.URL)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", streams.ErrPoison, err)
	}
	t := f.newTurn(msg, req, u.Host)
	if lost, err := t.slotLost(ctx, msg); lost || err != nil {
		return nil, err
	}
	if f.robots != nil {
		v, err := f.robots.check(ctx, u)
		if err != nil {
			return nil, err // the slot stays leased: the redelivery uses it
		}
		if done, err := t.robots(ctx, v); done {
			return nil, err
		}
	}
	ctx, started := traceStart(ctx)
	res, body, err := f.fetch(ctx, req)
	defer body.release() // the body stays in the budget until it is encoded
	var rerr *retryableError
	t.fetched(ctx, started(), errors.As(err, &rerr) && rerr.slowDown(), rerr)
	switch {
	case errors.Is(err, errBlockedAddress):
		f.count("dropped_private_address", 1)
		f.log.Info("dropped: not a public address", zap.String("url", req.URL), zap.Error(err))
		return nil, nil
	case rerr != nil:
		return nil, f.retry(ctx, req, rerr)
	case err != nil:
		f.count("fetch_errors_final", 1)
		return nil, err
	case res == nil:
		return nil, nil // final HTTP error: counted, nothing to parse
	}
	payload, err := f.encode(ctx, res)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", streams.ErrPoison, err)
	}
	out := message.NewMessage(watermill.NewUUID(), payload)
	out.Metadata.Set("content_encoding", spiders.ResponseEncodingZstd)
	return []*message.Message{out}, nil
}

// retry puts req in the delayed set for its next attempt, or gives up on it (a dead
// letter with the last error) after max_retries. The caller acks the input only once the
// retry is in Redis.
func (f *Fetch) retry(ctx context.Context, req *spiders.Request, rerr *retryableError) error {
	if req.Retries >= f.settings.Retries() {
		f.count("retries_exhausted", 1)
		return fmt.Errorf("%w: handlers: gave up on %s after %d retries: %w", streams.ErrPoison, req.URL, req.Retries, rerr.err)
	}
	next := *req
	next.Retries++
	next.LastError = rerr.err.Error()
	payload, err := spiders.MarshalRequest(&next)
	if err != nil {
		return fmt.Errorf("%w: %w", streams.ErrPoison, err)
	}
	delay := retryDelay(f.base, next.Retries, rerr.retryAfter, time.Now())
	if err := f.delayed.Schedule(ctx, HostOf(req.URL), req.Priority, req.Depth, payload, time.Now().Add(delay)); err != nil {
		return err // not in Redis: the input is not acked and comes back
	}
	f.count("retries_scheduled", 1)
	f.retryLog.Info("retry scheduled", zap.String("url", req.URL), zap.Int("retry", next.Retries),
		zap.Duration("in", delay), zap.String("error", next.LastError))
	return nil
}

// retryableError is a fetch failure worth retrying, with the server's status and
// Retry-After.
type retryableError struct {
	err        error
	status     int
	retryAfter string
}

// slowDown reports an answer that asks the whole host to slow down (429, 503).
func (e *retryableError) slowDown() bool {
	return e.status == http.StatusTooManyRequests || e.status == http.StatusServiceUnavailable
}

func (e *retryableError) Error() string { return e.err.Error() }
func (e *retryableError) Unwrap() error { return e.err }

// Fetch performs one request. It returns (nil, nil) for a final HTTP error status, a
// *retryableError for a failure worth retrying, and an error wrapping streams.ErrPoison
// when retrying cannot help. The body counts against the process's body budget while it
// is read.
func (f *Fetch) Fetch(ctx context.Context, req *spiders.Request) (*spiders.Response, error) {
	res, body, err := f.fetch(ctx, req)
	if res != nil && body != nil {
		res.Body = append([]byte(nil), res.Body...) // the pooled buffer goes back
	}
	body.release()
	return res, err
}

// fetch is Fetch; the body (in a pooled buffer) stays in the budget until the caller
// releases the returned ticket (nil when no body was read).
func (f *Fetch) fetch(ctx context.Context, req *spiders.Request) (*spiders.Response, *bodyTicket, error) {
	var body io.Reader
	if len(req.Body) > 0 {
		body = bytes.NewReader(req.Body)
	}
	if err := req.Validate(); err != nil {
		return nil, nil, fmt.Errorf("%w: handlers: %w", streams.ErrPoison, err)
	}
	ctx = context.WithValue(ctx, depthKey{}, req.Depth)
	hreq, err := http.NewRequestWithContext(ctx, req.HTTPMethod(), req.URL, body)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: handlers: build request for %s: %w", streams.ErrPoison, req.URL, err)
	}
	hreq.Header.Set("User-Agent", f.settings.UserAgent)
	hreq.Header.Set("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8")
	hreq.Header.Set("Accept-Encoding", acceptEncoding)
	for k, v := range f.settings.Headers {
		hreq.Header.Set(k, v)
	}
	for k, v := range req.Headers {
		hreq.Header.Set(k, v)
	}
	cond, err := f.cond.apply(ctx, req, hreq)
	if err != nil {
		return nil, nil, &retryableError{err: fmt.Errorf("handlers: validators of %s: %w", req.URL, err)}
	}
	hreq, release, err := f.viaProxy(ctx, req, hreq)
	if err != nil {
		return nil, nil, err
	}
	resp, err := f.do(ctx, hreq, sessionOf(req))
	defer release(resp, err) // the proxy's slot is held until the body is read
	var refused *redirectRefused
	if errors.As(err, &refused) {
		f.count("redirect_refused_"+refused.reason, 1)
		f.log.Info("redirect refused", zap.String("url", req.URL), zap.String("to", refused.target), zap.String("reason", refused.reason))
		return nil, nil, nil
	}
	if err != nil {
		if errors.Is(err, errFinal) {
			return nil, nil, fmt.Errorf("%w: handlers: fetch %s: %w", streams.ErrPoison, req.URL, err)
		}
		return nil, nil, &retryableError{err: fmt.Errorf("handlers: fetch %s: %w", req.URL, err)}
	}
	defer resp.Body.Close()
	f.count("status_"+strconv.Itoa(resp.StatusCode), 1)
	switch code := resp.StatusCode; {
	case retryableStatus(code):
		return nil, nil, &retryableError{err: fmt.Errorf("handlers: fetch %s: HTTP %d", req.URL, code),
			status: code, retryAfter: resp.Header.Get("Retry-After")}
	case code >= 400:
		f.count("http_errors_final", 1)
		return nil, nil, nil
	case code == http.StatusNotModified && cond != nil:
		f.count("not_modified", 1) // unchanged since the last fetch: nothing to parse or store
		return nil, nil, nil
	case code >= 300 && code < 400 && resp.Header.Get("Location") != "":
		f.count("redirects_not_followed", 1) // max_redirects: 0
		return nil, nil, nil
	}
	want := min(max(resp.ContentLength, budgetStep), f.settings.MaxBodySize+1)
	held, err := f.budget.start(ctx, want)
	if err != nil {
		return nil, nil, &retryableError{err: fmt.Errorf("handlers: fetch %s: waiting for body budget: %w", req.URL, err)}
	}
	data, truncated, err := readBody(ctx, resp, f.settings.MaxBodySize, held)
	if err != nil {
		held.release()
		if errors.Is(err, errFinal) {
			return nil, nil, fmt.Errorf("%w: handlers: %s: %w", streams.ErrPoison, req.URL, err)
		}
		return nil, nil, &retryableError{err: fmt.Errorf("handlers: fetch %s: %w", req.URL, err)}
	}
	f.count("pages_fetched", 1)
	f.count("bytes_fetched", int64(len(data)))
	ctype := resp.Header.Get("Content-Type")
	if textual(ctype) && spiders.LooksBinary(data) {
		// Served as a page, but an image, archive or other bytes: parsing cannot help,
		// and neither can a retry.
		f.count("bodies_not_text", 1)
		f.log.Info("dropped: body served as text is binary", zap.String("url", req.URL), zap.String("content_type", ctype))
		held.release()
		return nil, nil, nil
	}
	data, cs, err := spiders.DecodeText(data, ctype)
	if err != nil {
		held.release()
		return nil, nil, fmt.Errorf("%w: handlers: %s: %w", streams.ErrPoison, req.URL, err)
	}
	if cs != "" && cs != "utf-8" {
		f.count("bodies_decoded_"+cs, 1)
	}
	if truncated {
		f.count("bodies_truncated", 1)
		f.log.Info("body cut at max_body_size", zap.String("url", req.URL), zap.Int64("max_body_size", f.settings.MaxBodySize))
	}
	if code := resp.StatusCode; code >= 200 && code < 300 {
		if err := f.cond.save(ctx, cond, resp.Header); err != nil {
			f.log.Warn("validators not saved; the next visit fetches the page whole", zap.String("url", req.URL), zap.Error(err))
		}
	}
	hdr := resp.Header.Clone()
	hdr.Del("Content-Encoding") // the body we pass on is decoded
	hdr.Del("Content-Length")
	f.log.Debug("fetched", zap.String("url", req.URL), zap.Int("status", resp.StatusCode), zap.Int("bytes", len(data)))
	return &spiders.Response{Request: req, URL: resp.Request.URL.String(), Status: resp.StatusCode,
		Headers: hdr, Body: data, Truncated: truncated, Charset: cs, FetchedAt: time.Now().UTC()}, held, nil
}

// textual reports content types a page is served with: HTML, XHTML or plain text.
func textual(contentType string) bool {
	mt, _, _ := strings.Cut(strings.ToLower(contentType), ";")
	switch strings.TrimSpace(mt) {
	case "text/html", "application/xhtml+xml", "text/plain":
		return true
	}
	return false
}

// viaProxy routes hreq through the request's proxy meta or the next proxy of the
// rotation, if any; the returned function gives the proxy's slot back with the outcome.
// The target of a proxied fetch is checked by the network guard here (the proxy, not
// this process, connects to it).
func (f *Fetch) viaProxy(ctx context.Context, req *spiders.Request, hreq *http.Request) (*http.Request, func(*http.Response, error), error) {
	noop := func(*http.Response, error) {}
	var u *url.URL
	var ps *proxyState
	if raw, ok := req.Meta["proxy"].(string); ok && raw != "" {
		var err error
		if u, err = spiders.ParseProxy(raw); err != nil {
			return nil, noop, fmt.Errorf("%w: handlers: meta proxy of %s: %w", streams.ErrPoison, req.URL, err)
		}
	} else if f.proxies != nil {
		var err error
		if ps, err = f.proxies.acquire(ctx); err != nil {
			return nil, noop, &retryableError{err: fmt.Errorf("handlers: waiting for a proxy: %w", err)}
		}
		u = ps.u
	}
	if u == nil {
		return hreq, noop, nil
	}
	release := func(resp *http.Response, err error) {
		failed := proxyFailed(resp, err)
		if failed {
			f.count("proxy_failures", 1)
		}
		if ps != nil && f.proxies.release(ps, failed) {
			f.count("proxies_benched", 1)
			f.log.Warn("proxy benched after failing in a row", zap.String("proxy", u.Redacted()),
				zap.Int("failures", f.proxies.banAfter), zap.Duration("for", f.proxies.banFor))
		}
	}
	if f.guard != nil {
		if err := f.guard.checkProxiedTarget(ctx, hreq.URL); err != nil {
			release(nil, nil)
			if errors.Is(err, errBlockedAddress) {
				return nil, noop, err
			}
			return nil, noop, &retryableError{err: fmt.Errorf("handlers: resolve %s: %w", hreq.URL.Host, err)}
		}
	}
	f.count("proxied_requests", 1)
	return hreq.WithContext(context.WithValue(hreq.Context(), proxyKey{}, u)), release, nil
}

// do sends hreq with the cookies of session and saves the cookies the server set (on
// every hop of a redirect chain).
func (f *Fetch) do(ctx context.Context, hreq *http.Request, session string) (*http.Response, error) {
	client := f.client
	if f.cookies != nil {
		jar, save, err := f.cookies.jar(ctx, session, hreq.URL)
		if err != nil {
			return nil, err
		}
		if jar != nil {
			c := *f.client
			c.Jar = jar
			client = &c
		}
		defer func() {
			if err := save(context.WithoutCancel(ctx)); err != nil {
				f.log.Warn("cookies not saved", zap.String("url", hreq.URL.Redacted()), zap.Error(err))
			}
		}()
	}
	return client.Do(hreq)
}

func (f *Fetch) count(field string, n int64) {
	if f.counters != nil {
		f.counters.Add(field, n)
	}
}

// sampled returns log with a sampler that lets through the first n entries of each
// message per second and drops the rest: for lines that may come once per request.
func sampled(log *zap.Logger, n int) *zap.Logger {
	return log.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		return zapcore.NewSamplerWithOptions(c, time.Second, n, 0)
	}))
}
