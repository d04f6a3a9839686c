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

	"github.com/streamcrawl/streamcrawl/spiders"
)

// acceptEncoding lists the encodings the fetcher decodes.
const acceptEncoding = "gzip, deflate, br, zstd"

// newHTTPClient builds the fetcher's client from the spider settings: connect and
// response timeouts, a redirect limit, and a connection pool sized for the concurrency.
func newHTTPClient(s spiders.Settings) *http.Client {
	dialer := net.Dialer{Timeout: s.ConnectTimeout, KeepAlive: 30 * time.Second}
	dial := dialer.DialContext
	if g := newGuard(s); g != nil {
		dial = g.dialer(dialer)
	}
	tr := &http.Transport{
		Proxy:                 proxyFor,
		DialContext:           dial,
		TLSHandshakeTimeout:   s.ConnectTimeout,
		ResponseHeaderTimeout: s.DownloadTimeout,
		MaxIdleConns:          4 * s.Concurrency,
		MaxIdleConnsPerHost:   s.Concurrency,
		IdleConnTimeout:       90 * time.Second,
		DisableCompression:    true, // we ask for and decode encodings ourselves
		ForceAttemptHTTP2:     true,
	}
	maxRedirects := s.Redirects()
	return &http.Client{
		Transport: tr,
		Timeout:   s.DownloadTimeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			return checkHops(req, via, maxRedirects)
		},
	}
}

// checkHops refuses a redirect past the limit (with a limit of 0 the redirect itself is
// the response) and one to a scheme other than http(s).
func checkHops(req *http.Request, via []*http.Request, maxRedirects int) error {
	switch {
	case maxRedirects == 0:
		return http.ErrUseLastResponse
	case len(via) > maxRedirects:
		return fmt.Errorf("%w: more than %d redirects", errFinal, maxRedirects)
	case req.URL.Scheme != "http" && req.URL.Scheme != "https":
		return &redirectRefused{reason: spiders.DropScheme, target: req.URL.Redacted()}
	}
	return nil
}

// errFinal marks fetch failures that retrying cannot fix.
var errFinal = errors.New("final")

// readBody reads and decodes resp's body, cut at max bytes of decoded content, into a
// pooled buffer that t holds (and gives back on release), reserving the bytes from t's
// budget as they come. It reports whether the body was cut.
func readBody(ctx context.Context, resp *http.Response, max int64, t *bodyTicket) ([]byte, bool, error) {
	var r io.Reader = resp.Body
	switch enc := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip", "x-gzip", "deflate":
		open := func(r io.Reader) (io.ReadCloser, error) { return gzip.NewReader(r) }
		if enc == "deflate" {
			open = zlib.NewReader
		}
		zr, err := open(resp.Body)
		if err != nil {
			return nil, false, fmt.Errorf("fetch: %s body: %w", enc, err)
		}
		defer zr.Close()
		r = zr
	case "br":
		r = brotli.NewReader(resp.Body)
	case "zstd":
		zr, err := zstd.NewReader(resp.Body, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(max)+1<<20))
		if err != nil {
			return nil, false, fmt.Errorf("fetch: zstd body: %w", err)
		}
		defer zr.Close()
		r = zr
	default:
		return nil, false, fmt.Errorf("%w: unsupported content-encoding %q", errFinal, enc)
	}
	capHint := min(max, 64<<10)
	if resp.ContentLength > 0 && resp.ContentLength <= max {
		capHint = resp.ContentLength
	}
	t.buf = getBodyBuffer(capHint + 1)
	body, err := readAllInto(*t.buf, io.LimitReader(&budgetReader{ctx: ctx, r: r, t: t}, max+1))
	*t.buf = body // the buffer it grew into goes back to the pool
	if err != nil {
		return nil, false, fmt.Errorf("fetch: read body: %w", err)
	}
	if int64(len(body)) > max {
		return body[:max], true, nil
	}
	return body, false, nil
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
