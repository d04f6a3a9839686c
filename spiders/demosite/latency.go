package demosite

import (
	"net/http"
	"time"
)

// WithLatency returns h answering every request after d (a slow site, for scaling
// benchmarks); d <= 0 returns h. A request whose client gives up meanwhile gets no answer.
func WithLatency(h http.Handler, d time.Duration) http.Handler {
	if d <= 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			h.ServeHTTP(w, r)
		case <-r.Context().Done():
		}
	})
}
