package demosite

import (
	"net/http"
	"sync"

	"github.com/streamcrawl/streamcrawl/spiders/internal/sitekit"
)

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 32<<10); return &b }}

// ServeHTTP counts the request and answers it. Absolute links in the answer use the
// request's Host header (and https when the connection is TLS).
func (s *Site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.counter.Add(requestKey(r))
	sitekit.Serve(w, r, &bufPool, s.render)
}

// requestKey returns path?query of r as sent, without allocating in the common case.
func requestKey(r *http.Request) string {
	if u := r.RequestURI; u != "" && u[0] == '/' {
		return u
	}
	return r.URL.RequestURI()
}

// Requests returns how many requests the site has served per path?query as sent
// (fragments are never sent; robots.txt fetches are included).
func (s *Site) Requests() map[string]int { return s.counter.Snapshot() }

// TotalRequests returns the number of requests served since New or the last Reset.
func (s *Site) TotalRequests() int64 { return s.counter.Total() }

// Reset forgets every counted request.
func (s *Site) Reset() { s.counter.Reset() }
