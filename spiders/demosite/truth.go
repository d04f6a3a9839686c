package demosite

import (
	"net/http"
	"net/url"
	"sort"
	"strings"
)

// Kind is what a URL of the site answers.
type Kind int

// Kinds of answers.
const (
	// HTML is a 200 text/html page.
	HTML Kind = iota + 1
	// NotFound is a 404.
	NotFound
	// ServerError is a 500.
	ServerError
	// NonHTML is a 200 answer that is not HTML (JSON, PNG, text).
	NonHTML
)

// String returns the name of the kind.
func (k Kind) String() string {
	switch k {
	case HTML:
		return "html"
	case NotFound:
		return "not-found"
	case ServerError:
		return "server-error"
	case NonHTML:
		return "non-html"
	}
	return "unknown"
}

// truthOrigin is the origin the site is rendered with to compute its ground truth.
const (
	truthHost   = "demosite.invalid"
	truthOrigin = "http://" + truthHost
)

// truth is the result of crawling the site in process.
type truth struct {
	urls     []string        // sorted path?query
	kinds    map[string]Kind // by path?query
	products []int           // ids of product pages reached, sorted
}

// KindOf returns what the site answers to pathQuery (path with optional ?query).
func (s *Site) KindOf(pathQuery string) Kind {
	path, query, _ := strings.Cut(pathQuery, "?")
	_, status, ctype := s.render(nil, truthOrigin, path, query)
	return kindOf(status, ctype)
}

func kindOf(status int, ctype string) Kind {
	switch {
	case status == http.StatusNotFound:
		return NotFound
	case status >= 500:
		return ServerError
	case ctype == ctHTML:
		return HTML
	}
	return NonHTML
}

// Reachable returns, sorted, every path?query a crawler reaches by starting at / and
// following every a[href] on the site's host: fragments stripped, queries kept as
// written, offsite and mailto: links dropped. It includes tracking-parameter variants,
// 404s, 500s and non-HTML resources; with obeyRobots it leaves out /private/. Only 200
// HTML pages are followed. /robots.txt is not linked and so not included.
func (s *Site) Reachable(obeyRobots bool) []string {
	return append([]string(nil), s.groundTruth(obeyRobots).urls...)
}

// ReachableKind returns, sorted, the reachable path?query that answer with kind k.
func (s *Site) ReachableKind(obeyRobots bool, k Kind) []string {
	t := s.groundTruth(obeyRobots)
	var out []string
	for _, u := range t.urls {
		if t.kinds[u] == k {
			out = append(out, u)
		}
	}
	return out
}

// Products returns every reachable product, by ID.
func (s *Site) Products() []Product {
	t := s.groundTruth(true)
	out := make([]Product, 0, len(t.products))
	for _, id := range t.products {
		out = append(out, s.cat.product(id))
	}
	return out
}

// ExpectedItems returns the fields a correct crawl of the site served at baseURL
// (e.g. "http://127.0.0.1:8080/") stores with the spider of SpiderYAML: one item per
// product, url being the absolute canonical URL, by product ID.
func (s *Site) ExpectedItems(baseURL string) []map[string]string {
	origin := originOf(baseURL)
	var out []map[string]string
	for _, p := range s.Products() {
		out = append(out, map[string]string{"url": origin + p.URL, "name": p.Name, "price": p.Price, "sku": p.SKU})
	}
	return out
}

// originOf returns scheme://host[:port] of rawURL, or rawURL without a trailing slash
// when it does not parse.
func originOf(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return strings.TrimRight(rawURL, "/")
	}
	return u.Scheme + "://" + u.Host
}

// groundTruth crawls the site's rendered pages once per obeyRobots and caches the result.
func (s *Site) groundTruth(obeyRobots bool) *truth {
	s.truthMu.Lock()
	defer s.truthMu.Unlock()
	if t, ok := s.truth[obeyRobots]; ok {
		return t
	}
	t := s.crawl(obeyRobots)
	s.truth[obeyRobots] = t
	return t
}

// crawl is a breadth-first crawl of the site from /, in process, over render.
func (s *Site) crawl(obeyRobots bool) *truth {
	t := &truth{kinds: map[string]Kind{}}
	r := &resolver{origin: truthOrigin, host: truthHost}
	queue := []string{"/"}
	t.kinds["/"] = 0
	var buf []byte
	for len(queue) > 0 {
		pq := queue[0]
		queue = queue[1:]
		path, query, _ := strings.Cut(pq, "?")
		var status int
		var ctype string
		buf, status, ctype = s.render(buf[:0], truthOrigin, path, query)
		k := kindOf(status, ctype)
		t.kinds[pq] = k
		if k != HTML {
			continue
		}
		if id, ok := number(strings.TrimPrefix(path, "/p/")); ok && strings.HasPrefix(path, "/p/") {
			t.products = append(t.products, id)
		}
		base, err := url.Parse(truthOrigin + pq)
		if err != nil {
			continue
		}
		eachHref(buf, func(href string) {
			u, ok := r.resolve(base, href)
			if !ok {
				return
			}
			if _, seen := t.kinds[u]; seen || (obeyRobots && strings.HasPrefix(u, "/private/")) {
				return
			}
			t.kinds[u] = 0
			queue = append(queue, u)
		})
	}
	for u := range t.kinds {
		t.urls = append(t.urls, u)
	}
	sort.Strings(t.urls)
	sort.Ints(t.products)
	t.products = dedupe(t.products)
	return t
}

func dedupe(ids []int) []int {
	out := ids[:0]
	for i, id := range ids {
		if i == 0 || id != ids[i-1] {
			out = append(out, id)
		}
	}
	return out
}
