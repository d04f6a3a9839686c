package fetch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
)

// httpFetch is the HTTP fetcher: net/http with the spider's timeouts, the network
// guard in its dialer, redirects ending the fetch (redirects.go), bodies decoded and
// cut at max_body_size under the process's body budget, conditional revisits.
type httpFetch struct {
	*shared
	client    *http.Client
	tr        *http.Transport // client's, under any wrapping: its idle connections are closed with the fetcher
	following *http.Client    // the login's: follows redirects within one fetch
	cond      *validators     // nil without a Redis client
}

// newHTTPFetch returns the HTTP fetcher of cfg, sharing sh's rules.
func newHTTPFetch(sh *shared, cfg Config) *httpFetch {
	h := &httpFetch{shared: sh, client: newHTTPClient(sh.settings)}
	h.tr, _ = h.client.Transport.(*http.Transport)
	if cfg.Metrics != nil {
		h.client.Transport = cfg.Metrics.Transport(h.client.Transport)
	}
	if cfg.HostStats != nil {
		h.client.Transport = hostStatsTransport{next: h.client.Transport, stats: cfg.HostStats}
	}
	h.following = followingClient(h.client, sh.settings.Redirects(), sh.scope)
	if cfg.Client != nil {
		h.cond = newValidators(cfg.Client, cfg.Layout, sh.settings)
	}
	return h
}

// roundTrip fetches req over HTTP (see roundTripper). The body (in a pooled buffer)
// stays in the budget until the caller releases the returned ticket (nil when no body
// was read).
func (f *httpFetch) roundTrip(ctx context.Context, req *spiders.Request) (*spiders.Response, *bodyTicket, string, error) {
	var body io.Reader
	if len(req.Body) > 0 {
		body = bytes.NewReader(req.Body)
	}
	if err := req.Validate(); err != nil {
		return nil, nil, "", fmt.Errorf("%w: fetch: %w", streams.ErrPoison, err)
	}
	hreq, err := http.NewRequestWithContext(ctx, req.HTTPMethod(), req.URL, body)
	if err != nil {
		return nil, nil, "", fmt.Errorf("%w: fetch: build request for %s: %w", streams.ErrPoison, spiders.RedactedURL(req.URL), err)
	}
	wireURL(hreq)
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
		return nil, nil, "", &retryableError{err: fmt.Errorf("fetch: validators of %s: %w", spiders.RedactedURL(req.URL), err)}
	}
	asked := hreq.Header.Get("If-None-Match") != "" || hreq.Header.Get("If-Modified-Since") != ""
	hreq, release, err := f.viaProxy(ctx, req, hreq)
	if err != nil {
		return nil, nil, "", err
	}
	if err := beforeSend(ctx); err != nil {
		release(nil, nil)
		return nil, nil, "", err // unsent: see fence.go
	}
	resp, err := f.do(ctx, f.client, hreq, sessionOf(req))
	defer release(resp, err) // the proxy's slot is held until the body is read
	if err != nil && strings.Contains(err.Error(), "failed to parse Location header") {
		// net/http reads a redirect's Location before it asks whether to follow: one no
		// parser reads comes again on every retry.
		f.count("redirect_location_invalid", 1)
		f.log.Info("redirect with an unusable Location", zap.String("url", spiders.RedactedURL(req.URL)), zap.Error(err))
		return nil, nil, "redirect_location_invalid", nil
	}
	if err != nil {
		if errors.Is(err, errFinal) || finalTransportError(err) {
			return nil, nil, "", fmt.Errorf("%w: fetch: %s: %w", streams.ErrPoison, spiders.RedactedURL(req.URL), err)
		}
		return nil, nil, "", &retryableError{err: fmt.Errorf("fetch: %s: %w", spiders.RedactedURL(req.URL), err)}
	}
	defer resp.Body.Close()
	if code := resp.StatusCode; code >= 300 && code != http.StatusNotModified {
		// A redirect or an error is not the page the stored validators describe: the
		// page that comes back is fetched whole, not answered 304 from them.
		f.forgetValidators(ctx, req, cond)
	}
	if ends, reason, err := f.statusEnds(req, resp.StatusCode, resp.Header); ends {
		if reason != "" {
			return &spiders.Response{Request: req, URL: req.URL, Status: resp.StatusCode}, nil, reason, err
		}
		return nil, nil, reason, err
	}
	switch code := resp.StatusCode; {
	case code == http.StatusNotModified && !asked:
		// "Not modified" since nothing: no validator went out, so the answer says
		// nothing about the page (a broken server or cache). A bad answer, retried.
		f.count("unsolicited_not_modified", 1)
		return nil, nil, "", &retryableError{err: fmt.Errorf("fetch: %s: HTTP 304 to a request without validators", spiders.RedactedURL(req.URL)),
			status: code}
	case code == http.StatusNotModified && cond != nil:
		f.count("not_modified", 1) // unchanged since the last fetch: nothing to parse or store
		if err := f.cond.notModified(ctx, cond); err != nil {
			f.log.Warn("validators not kept; a later visit may fetch the page whole", zap.String("url", spiders.RedactedURL(req.URL)), zap.Error(err))
		}
		return nil, nil, "not_modified", nil
	case isRedirect(code, resp.Header):
		// Its target is a new request (Fetcher.redirect); the body is not read.
		return &spiders.Response{Request: req, URL: req.URL, Status: code, Headers: resp.Header.Clone(),
			FetchedAt: time.Now().UTC()}, nil, "", nil
	case code == http.StatusSwitchingProtocols:
		// An upgrade nobody asked for: no page follows it, and a retry gets the same.
		f.count("unsolicited_upgrades", 1)
		return nil, nil, "unsolicited_upgrade", nil
	}
	want := min(max(resp.ContentLength, budgetStep), f.settings.MaxBodySize+1)
	held, err := f.budget.start(ctx, want)
	if err != nil {
		return nil, nil, "", &retryableError{err: fmt.Errorf("fetch: %s: waiting for body budget: %w", spiders.RedactedURL(req.URL), err)}
	}
	data, truncated, err := readBody(ctx, resp, f.settings.MaxBodySize, held)
	if err != nil {
		held.release()
		if errors.Is(err, errFinal) {
			return nil, nil, "", fmt.Errorf("%w: fetch: %s: %w", streams.ErrPoison, spiders.RedactedURL(req.URL), err)
		}
		return nil, nil, "", &retryableError{err: fmt.Errorf("fetch: %s: %w", spiders.RedactedURL(req.URL), err)}
	}
	f.count("pages_fetched", 1)
	f.count("bytes_fetched", int64(len(data)))
	ctype := resp.Header.Get("Content-Type")
	// A text declared UTF-16 is full of zero bytes: it is looked at once decoded.
	utf16 := spiders.DeclaresUTF16(ctype)
	if textual(ctype) && !utf16 && spiders.LooksBinary(data) {
		held.release()
		return nil, nil, f.notText(req, ctype), nil
	}
	data, cs, err := spiders.DecodeText(data, ctype)
	if err != nil {
		held.release()
		return nil, nil, "", fmt.Errorf("%w: fetch: %s: %w", streams.ErrPoison, spiders.RedactedURL(req.URL), err)
	}
	if textual(ctype) && utf16 && spiders.LooksBinary(data) {
		held.release()
		return nil, nil, f.notText(req, ctype), nil
	}
	if cs != "" && cs != "utf-8" {
		f.count("bodies_decoded_"+cs, 1)
	}
	if truncated {
		f.count("bodies_truncated", 1)
		f.log.Info("body cut at max_body_size", zap.String("url", spiders.RedactedURL(req.URL)), zap.Int64("max_body_size", f.settings.MaxBodySize))
	}
	if code := resp.StatusCode; code >= 200 && code < 300 {
		if err := f.cond.save(ctx, cond, resp.Header); err != nil {
			f.log.Warn("validators not saved; the next visit fetches the page whole", zap.String("url", spiders.RedactedURL(req.URL)), zap.Error(err))
		}
	}
	hdr := resp.Header.Clone()
	hdr.Del("Content-Encoding") // the body we pass on is decoded
	hdr.Del("Content-Length")
	f.log.Debug("fetched", zap.String("url", spiders.RedactedURL(req.URL)), zap.Int("status", resp.StatusCode), zap.Int("bytes", len(data)))
	return &spiders.Response{Request: req, URL: resp.Request.URL.String(), Status: resp.StatusCode,
		Headers: hdr, Body: data, Truncated: truncated, Charset: cs, FetchedAt: time.Now().UTC()}, held, "", nil
}

// forgetValidators deletes the validators stored for c's URL (none stored: nothing).
func (f *httpFetch) forgetValidators(ctx context.Context, req *spiders.Request, c *conditional) {
	if err := f.cond.drop(ctx, c); err != nil {
		f.log.Warn("validators not forgotten; the page's next visit may be answered 304", zap.String("url", spiders.RedactedURL(req.URL)), zap.Error(err))
	}
}

// notText counts and logs a body served as a page that is an image, an archive or
// other bytes (parsing cannot help, and neither can a retry) and returns the drop's
// reason.
func (f *httpFetch) notText(req *spiders.Request, ctype string) string {
	f.count("bodies_not_text", 1)
	f.log.Info("dropped: body served as text is binary", zap.String("url", spiders.RedactedURL(req.URL)), zap.String("content_type", ctype))
	return "body_not_text"
}

// wireURL writes hreq's URL as browsers send it (spiders.WireURL): the host as its key,
// the query percent-encoded.
func wireURL(hreq *http.Request) {
	hreq.URL.RawQuery = spiders.WireQuery(hreq.URL.RawQuery)
	if h := spiders.HostKeyOf(hreq.URL); h != "" && h != hreq.URL.Host {
		hreq.URL.Host, hreq.Host = h, h
	}
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
func (f *httpFetch) viaProxy(ctx context.Context, req *spiders.Request, hreq *http.Request) (*http.Request, func(*http.Response, error), error) {
	noop := func(*http.Response, error) {}
	u, ps, err := pickProxy(ctx, f.proxies, req)
	if err != nil {
		return nil, noop, err
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
			return nil, noop, &retryableError{err: fmt.Errorf("fetch: resolve %s: %w", hreq.URL.Host, err)}
		}
	}
	f.count("proxied_requests", 1)
	return hreq.WithContext(context.WithValue(hreq.Context(), proxyKey{}, u)), release, nil
}

// do sends hreq with client and the cookies of session, and saves the cookies the
// server set (on every hop, when client follows redirects).
func (f *httpFetch) do(ctx context.Context, client *http.Client, hreq *http.Request, session string) (*http.Response, error) {
	if f.cookies != nil {
		jar, save, err := f.cookies.jar(ctx, session, hreq.URL)
		if err != nil {
			return nil, err
		}
		if jar != nil {
			c := *client
			c.Jar = jar
			client = &c
		}
		defer func() {
			if err := save(context.WithoutCancel(ctx)); err != nil {
				f.log.Warn("cookies not saved", zap.String("url", spiders.RedactedURL(hreq.URL.String())), zap.Error(err))
			}
		}()
	}
	resp, err := client.Do(hreq)
	var uerr *url.Error
	if errors.As(err, &uerr) {
		uerr.URL = spiders.RedactedURL(uerr.URL) // net/http keeps the user name
	}
	return resp, err
}
