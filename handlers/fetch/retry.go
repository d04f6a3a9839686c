package fetch

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams/loop"
)

// Retry delays of the fetch stage.
const (
	// DefaultRetryBase is the delay before the first retry; each next one doubles it.
	DefaultRetryBase = time.Second
	// maxRetryDelay caps a retry delay, Retry-After included.
	maxRetryDelay = 10 * time.Minute
)

// statusEnds counts a response's status and reports whether it ends the fetch before
// the body is read, the same for an HTTP fetch and a rendered page: a status worth
// retrying (err, a *retryableError with the Retry-After) or another error status (a final
// drop, reason "http_error").
func (s *shared) statusEnds(req *spiders.Request, code int, h http.Header) (ends bool, reason string, err error) {
	s.count("status_"+strconv.Itoa(code), 1)
	switch {
	case retryableStatus(code):
		return true, "", &retryableError{err: fmt.Errorf("fetch: %s: HTTP %d", spiders.RedactedURL(req.URL), code),
			status: code, retryAfter: h.Get("Retry-After")}
	case code >= 400:
		s.count("http_errors_final", 1)
		return true, "http_error", nil
	}
	return false, "", nil
}

// retryableStatus reports answers worth retrying: 408, 429 and 5xx.
func retryableStatus(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500
}

// retryDelay returns the wait before retry number n (1-based): the server's Retry-After
// when it says so, else loop.Backoff (base×2^(n-1), ±50% jitter); capped at
// maxRetryDelay.
func retryDelay(base time.Duration, n int, retryAfter string, now time.Time) time.Duration {
	if d, ok := parseRetryAfter(retryAfter, now); ok {
		return min(d, maxRetryDelay)
	}
	return loop.Backoff(base, maxRetryDelay, n)
}

// parseRetryAfter reads a Retry-After header: seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.Atoi(v); err == nil {
		if secs < 0 {
			return 0, false
		}
		return time.Duration(secs) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
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
