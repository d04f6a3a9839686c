package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"

	"github.com/streamcrawl/streamcrawl/handlers/internal/wire"
	"github.com/streamcrawl/streamcrawl/spiders"
)

// acceptEncoding lists the encodings the fetcher decodes.
const acceptEncoding = "gzip, deflate, br, zstd"

// maxHeaderBytes caps a response's header block: what the response encoding keeps
// (wire.MaxHeaderBytes), where net/http's default is 10 MB.
const maxHeaderBytes = wire.MaxHeaderBytes

// newHTTPClient builds the fetcher's client from the spider settings: connect and
// response timeouts, response headers of at most maxHeaderBytes, no redirects followed,
// and a connection pool sized for the concurrency.
func newHTTPClient(s spiders.Settings) *http.Client {
	dialer := net.Dialer{Timeout: s.ConnectTimeout, KeepAlive: 30 * time.Second}
	dial := dialer.DialContext
	if g := newGuard(s); g != nil {
		dial = g.dialer(dialer)
	}
	tr := &http.Transport{
		Proxy:                  proxyFor,
		DialContext:            dial,
		TLSHandshakeTimeout:    s.ConnectTimeout,
		ResponseHeaderTimeout:  s.DownloadTimeout,
		MaxIdleConns:           4 * s.Concurrency,
		MaxIdleConnsPerHost:    s.Concurrency,
		IdleConnTimeout:        90 * time.Second,
		DisableCompression:     true, // we ask for and decode encodings ourselves
		MaxResponseHeaderBytes: maxHeaderBytes,
		ForceAttemptHTTP2:      true,
	}
	return &http.Client{
		Transport: tr,
		Timeout:   s.DownloadTimeout,
		// A redirect ends the fetch; its target is a new request (redirects.go).
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// followingClient is c following redirects inside one fetch, up to maxRedirects, to
// http(s) only and within scope: for the login step, whose answer is the end of its
// chain (its cookies are saved at every hop).
func followingClient(c *http.Client, maxRedirects int, scope *spiders.Scope) *http.Client {
	fc := *c
	fc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		switch {
		case maxRedirects == 0:
			return http.ErrUseLastResponse
		case len(via) > maxRedirects:
			return fmt.Errorf("%w: more than %d redirects", errFinal, maxRedirects)
		case req.URL.Scheme != "http" && req.URL.Scheme != "https":
			return &redirectRefused{reason: spiders.DropScheme, target: req.URL.Redacted()}
		}
		if ok, reason := scope.Allows(&spiders.Request{URL: req.URL.String()}); !ok {
			return &redirectRefused{reason: reason, target: req.URL.Redacted()}
		}
		return nil
	}
	return &fc
}

// errFinal marks fetch failures that retrying cannot fix.
var errFinal = errors.New("final")

// maxCodings bounds the content codings of one body ("gzip, gzip" is two).
const maxCodings = 4

// decoder returns body with the content codings of the Content-Encoding header values
// undone (a list: "gzip, br" was gzipped, then compressed with br, so br is undone
// first), and the function that releases the decoders; max bounds what a decoder may
// hold in memory. An unknown coding, or more than maxCodings, is an errFinal: no retry
// decodes it.
func decoder(body io.Reader, values []string, max int64) (io.Reader, func(), error) {
	var codings []string
	for _, v := range values {
		for _, c := range strings.Split(v, ",") {
			if c = strings.ToLower(strings.TrimSpace(c)); c != "" && c != "identity" {
				codings = append(codings, c)
			}
		}
	}
	if len(codings) > maxCodings {
		return nil, nil, fmt.Errorf("%w: %d content codings (%s); at most %d are undone", errFinal, len(codings), strings.Join(codings, ", "), maxCodings)
	}
	var closers []func()
	done := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	r := body
	for i := len(codings) - 1; i >= 0; i-- {
		switch enc := codings[i]; enc {
		case "gzip", "x-gzip", "deflate":
			open := func(r io.Reader) (io.ReadCloser, error) { return gzip.NewReader(r) }
			if enc == "deflate" {
				open = zlib.NewReader
			}
			zr, err := open(r)
			if err != nil {
				done()
				return nil, nil, fmt.Errorf("%w: fetch: %s body: %w", errFinal, enc, err)
			}
			closers = append(closers, func() { zr.Close() })
			r = zr
		case "br":
			r = brotli.NewReader(r)
		case "zstd":
			zr, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(max)+1<<20))
			if err != nil {
				done()
				return nil, nil, fmt.Errorf("fetch: zstd body: %w", err)
			}
			closers = append(closers, zr.Close)
			r = zr
		default:
			done()
			return nil, nil, fmt.Errorf("%w: unsupported content-encoding %q", errFinal, enc)
		}
	}
	return r, done, nil
}

// readBody reads and decodes resp's body, cut at max bytes of decoded content, into a
// pooled buffer that t holds (and gives back on release), reserving the bytes from t's
// budget as they come. It reports whether the body was cut. A body whose encoding is
// broken is an errFinal: the same bytes come again on a retry.
func readBody(ctx context.Context, resp *http.Response, max int64, t *bodyTicket) ([]byte, bool, error) {
	raw := &rawBody{r: resp.Body}
	r, done, err := decoder(raw, resp.Header.Values("Content-Encoding"), max)
	if err != nil {
		return nil, false, err
	}
	defer done()
	capHint := min(max, 64<<10)
	if resp.ContentLength > 0 && resp.ContentLength <= max {
		capHint = resp.ContentLength
	}
	t.buf = getBodyBuffer(capHint + 1)
	body, err := readAllInto(*t.buf, io.LimitReader(&budgetReader{ctx: ctx, r: r, t: t}, max+1))
	*t.buf = body // the buffer it grew into goes back to the pool
	if err != nil {
		if raw.err == nil && r != io.Reader(raw) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			// The bytes came whole; undoing their coding failed: so would a retry.
			err = fmt.Errorf("%w: decode: %w", errFinal, err)
		}
		return nil, false, fmt.Errorf("fetch: read body: %w", err)
	}
	if int64(len(body)) > max {
		return body[:max], true, nil
	}
	return body, false, nil
}

// rawBody is a response body that remembers a read error of its own (the network's),
// so that it can be told from an error of a decoder reading it.
type rawBody struct {
	r   io.Reader
	err error
}

func (b *rawBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		b.err = err
	}
	return n, err
}

// finalTransportError reports a response net/http refused for what it is, not for
// how it travelled: the same bytes come again on a retry (conflicting Content-Length
// headers, a malformed status line or header block, a transfer coding it does not
// know, headers over maxHeaderBytes).
func finalTransportError(err error) bool {
	msg := err.Error()
	for _, s := range []string{"multiple Content-Length headers", "invalid Content-Length", "malformed HTTP",
		"malformed MIME header", "unsupported transfer encoding", "too many transfer encodings",
		"server response headers exceeded"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

func readAllInto(b []byte, r io.Reader) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if errors.Is(err, io.EOF) {
				return b, nil
			}
			return b, err
		}
	}
}
