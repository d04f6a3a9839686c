package metrics

import (
	"net/http"
	"time"
)

// Transport wraps an HTTP transport (nil: http.DefaultTransport) so that each round trip
// is timed in streamcrawl_fetch_duration_seconds.
func (m *Metrics) Transport(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	if m == nil {
		return next
	}
	return roundTripper{m: m, next: next}
}

type roundTripper struct {
	m    *Metrics
	next http.RoundTripper
}

func (t roundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	start := time.Now()
	res, err := t.next.RoundTrip(r)
	t.m.fetchSeconds.Observe(time.Since(start).Seconds())
	return res, err
}
