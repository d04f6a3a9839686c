package sitetest

import (
	"net/http"
	"sync"

	"github.com/streamcrawl/streamcrawl/spiders/internal/sitekit"
)

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// ServeHTTP counts the request under its canonical path?query and answers it. Absolute
// links in the answer use the request's Host header (and https when the connection is
// TLS).
func (s *Site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.counter.Add(Canonical(r.URL.EscapedPath(), r.URL.RawQuery))
	sitekit.Serve(w, r, &bufPool, s.render)
}

// Requests returns how many requests the site has served per canonical path?query
// (see Canonical; robots.txt fetches are included).
func (s *Site) Requests() map[string]int { return s.counter.Snapshot() }

// TotalRequests returns the number of requests served since New or the last Reset.
func (s *Site) TotalRequests() int64 { return s.counter.Total() }

// Reset forgets every counted request.
func (s *Site) Reset() { s.counter.Reset() }
