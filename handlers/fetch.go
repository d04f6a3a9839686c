package handlers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

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
	delayed  *streams.Delayed
	hosts    *streams.Hosts
	polite   *politeness
	robots   *robots
	budget   *bodyBudget
	base     time.Duration
	counters *streams.Counters
	log      *zap.Logger
}

// FetchConfig configures the fetch stage.
type FetchConfig struct {
	// Settings of the spider.
	Settings spiders.Settings
	// Delayed is where retries wait, and requests for a host that is at its limit.
	// Required.
	Delayed *streams.Delayed
	// Hosts enforces per-host politeness across fetchers. Required.
	Hosts *streams.Hosts
	// Client and Layout give robots.txt its shared cache (in each host's partition);
	// needed when the spider obeys robots.txt.
	Client redis.UniversalClient
	Layout streams.Layout
	// RetryBase is the delay before the first retry, doubled for each next one.
	// Default DefaultRetryBase.
	RetryBase time.Duration
	// Counters and Logger may be nil.
	Counters *streams.Counters
	Logger   *zap.Logger
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
	f := &Fetch{client: newHTTPClient(s), settings: s, delayed: cfg.Delayed, hosts: cfg.Hosts,
		polite: newPoliteness(s), budget: newBodyBudget(budget), base: cfg.RetryBase, counters: cfg.Counters, log: log}
	if s.RobotsObeyed() {
		if cfg.Client == nil {
			return nil, errors.New("handlers: obeying robots.txt needs a redis client")
		}
		f.robots = newRobots(cfg.Client, cfg.Layout, f.client, s.UserAgent, cfg.Counters, log)
	}
	return f, nil
}

// Handle fetches the request in msg and returns the response message.
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
	var crawlDelay time.Duration
	if f.robots != nil {
		v, err := f.robots.check(ctx, u)
		switch {
		case err != nil:
			return nil, err
		case v.wait > 0:
			return nil, f.park(ctx, req, v.wait, "robots_waits")
		case !v.allowed:
			f.count("robots_disallowed", 1)
			f.log.Debug("disallowed by robots.txt", zap.String("url", req.URL))
			return nil, nil
		}
		crawlDelay = v.delay
	}
	lease := msg.UUID + "/" + msg.Metadata.Get(streams.MetaStreamID)
	rule := f.polite.rule(u.Hostname(), crawlDelay)
	if rule.Concurrency > 0 || rule.Delay > 0 { // else nothing to enforce: no Redis work
		wait, err := f.hosts.Acquire(ctx, u.Host, lease, rule)
		if err != nil {
			return nil, err
		}
		if wait > 0 {
			return nil, f.park(ctx, req, wait, "politeness_waits")
		}
	}
	start := time.Now()
	res, body, err := f.fetch(ctx, req)
	defer body.release() // the body stays in the budget until it is encoded
	f.polite.observe(u.Hostname(), time.Since(start))
	if rerr := f.hosts.Release(context.WithoutCancel(ctx), u.Host, lease, rule); rerr != nil {
		f.log.Debug("release host slot failed; it expires by itself", zap.Error(rerr))
	}
	var rerr *retryableError
	switch {
	case errors.Is(err, errBlockedAddress):
		f.count("dropped_private_address", 1)
		f.log.Info("dropped: not a public address", zap.String("url", req.URL), zap.Error(err))
		return nil, nil
	case errors.As(err, &rerr):
		return nil, f.retry(ctx, req, rerr)
	case err != nil:
		f.count("fetch_errors_final", 1)
		return nil, err
	case res == nil:
		return nil, nil // final HTTP error: counted, nothing to parse
	}
	payload, err := spiders.MarshalResponse(res)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", streams.ErrPoison, err)
	}
	out := message.NewMessage(watermill.NewUUID(), payload)
	out.Metadata.Set("content_encoding", spiders.ResponseEncodingZstd)
	return []*message.Message{out}, nil
}

// park puts req in the delayed set until its host may be asked again; the input is
// acked only once it is there.
func (f *Fetch) park(ctx context.Context, req *spiders.Request, wait time.Duration, counter string) error {
	payload, err := spiders.MarshalRequest(req)
	if err != nil {
		return fmt.Errorf("%w: %w", streams.ErrPoison, err)
	}
	if err := f.delayed.Schedule(ctx, hostOf(req.URL), payload, time.Now().Add(wait)); err != nil {
		return err
	}
	f.count(counter, 1)
	return nil
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
	if err := f.delayed.Schedule(ctx, hostOf(req.URL), payload, time.Now().Add(delay)); err != nil {
		return err // not in Redis: the input is not acked and comes back
	}
	f.count("retries_scheduled", 1)
	f.log.Debug("retry scheduled", zap.String("url", req.URL), zap.Int("retry", next.Retries),
		zap.Duration("in", delay), zap.String("error", next.LastError))
	return nil
}

// retryableError is a fetch failure worth retrying, with the server's Retry-After.
type retryableError struct {
	err        error
	retryAfter string
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
	start := time.Now()
	resp, err := f.client.Do(hreq)
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
			retryAfter: resp.Header.Get("Retry-After")}
	case code >= 400:
		f.count("http_errors_final", 1)
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
	if truncated {
		f.count("bodies_truncated", 1)
		f.log.Info("body cut at max_body_size", zap.String("url", req.URL), zap.Int64("max_body_size", f.settings.MaxBodySize))
	}
	hdr := resp.Header.Clone()
	hdr.Del("Content-Encoding") // the body we pass on is decoded
	hdr.Del("Content-Length")
	f.log.Debug("fetched", zap.String("url", req.URL), zap.Int("status", resp.StatusCode),
		zap.Int("bytes", len(data)), zap.Duration("took", time.Since(start)))
	return &spiders.Response{Request: req, URL: resp.Request.URL.String(), Status: resp.StatusCode,
		Headers: hdr, Body: data, Truncated: truncated, FetchedAt: time.Now().UTC()}, held, nil
}

func (f *Fetch) count(field string, n int64) {
	if f.counters != nil {
		f.counters.Add(field, n)
	}
}
