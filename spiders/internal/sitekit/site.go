package sitekit

import (
	"net/http"
	"sync"
)

// Site is what every generated site does the same way: it serves its render function
// over HTTP, counts the requests it serves, and answers from its ground truth. A site
// embeds a *Site (through an unexported alias, so that only the methods show), and
// these methods are the site's.
type Site struct {
	truth   *Crawler
	key     func(*http.Request) string
	items   string
	pool    sync.Pool // of *[]byte render buffers
	counter Counter
}

// NewSite returns the shared part of a site: truth computes its ground truth, and its
// Render serves every answer (with /robots.txt, see Crawler.Disallow); key is the key
// a request is counted under; bufSize is the capacity of a new render buffer; items
// are the entries of SpiderYAML's items list (see SpiderYAML).
func NewSite(truth *Crawler, key func(*http.Request) string, bufSize int, items string) *Site {
	s := &Site{truth: truth, key: key, items: items}
	s.pool.New = func() any { b := make([]byte, 0, bufSize); return &b }
	return s
}

// ServeHTTP counts the request and answers it. Absolute links in the answer use the
// request's Host header (and https when the connection is TLS).
func (s *Site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.counter.Add(s.key(r))
	Serve(w, r, &s.pool, s.truth.render)
}

// Requests returns how many requests the site has served per key (path?query; robots.txt
// fetches are included) since it was made or last Reset.
func (s *Site) Requests() map[string]int { return s.counter.Snapshot() }

// TotalRequests returns the number of requests served since the site was made or
// last Reset.
func (s *Site) TotalRequests() int64 { return s.counter.Total() }

// Reset forgets every counted request.
func (s *Site) Reset() { s.counter.Reset() }

// KindOf returns what the site answers to pathQuery (path with optional ?query).
func (s *Site) KindOf(pathQuery string) Kind { return s.truth.KindOf(pathQuery) }

// Reachable returns, sorted, every path?query a crawler reaches by starting at / and
// following every a[href] on the site's host: fragments stripped, offsite and mailto:
// links dropped, with obeyRobots the URLs under the path robots.txt disallows left
// out. It includes 404s, 500s and non-HTML answers; only 200 HTML pages are followed.
// /robots.txt is not linked and so not included.
func (s *Site) Reachable(obeyRobots bool) []string { return s.truth.Reachable(obeyRobots) }

// ReachableKind returns, sorted, the reachable path?query that answer with kind k.
func (s *Site) ReachableKind(obeyRobots bool, k Kind) []string {
	return s.truth.Truth(obeyRobots).URLsOf(k)
}

// SpiderYAML returns a YAML spider called name that crawls the site served at baseURL
// (e.g. "http://127.0.0.1:8080/"): it follows every a[href] on the site's host and
// stores the items of the site's item rules. allowed_domains is the host of baseURL
// without its port.
func (s *Site) SpiderYAML(name, baseURL string) string {
	return SpiderYAML(name, baseURL, s.items)
}
