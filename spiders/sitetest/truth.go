package sitetest

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
	// NonHTML is a 200 answer that is not HTML (RSS, text).
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
	truthHost   = "sitetest.invalid"
	truthOrigin = "http://" + truthHost
)

// truth is the result of crawling the site in process.
type truth struct {
	urls     []string        // sorted path?query
	kinds    map[string]Kind // by path?query
	articles []int           // ids of article pages reached, sorted
}

// KindOf returns what the site answers to pathQuery (path with optional ?query, in
// any parameter order).
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

// Reachable returns, sorted, every canonical path?query (see Canonical) a crawler
// reaches by starting at / and following every a[href] on the site's host: fragments
// stripped, offsite and mailto: links dropped. It includes 404s, 500s and the feed;
// with obeyRobots it leaves out /drafts/. Only 200 HTML pages are followed.
// /robots.txt is not linked and so not included.
func (s *Site) Reachable(obeyRobots bool) []string {
	return append([]string(nil), s.groundTruth(obeyRobots).urls...)
}

// ReachableKind returns, sorted, the reachable canonical path?query that answer with kind k.
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

// Articles returns every reachable article, by ID.
func (s *Site) Articles() []Article {
	t := s.groundTruth(true)
	out := make([]Article, 0, len(t.articles))
	for _, id := range t.articles {
		out = append(out, s.c.article(id))
	}
	return out
}

// ExpectedItems returns the fields a correct crawl of the site served at baseURL
// (e.g. "http://127.0.0.1:8080/") stores with the spider of SpiderYAML: one item per
// article (url is the absolute canonical URL, date is YYYY-MM-DD), by article ID.
func (s *Site) ExpectedItems(baseURL string) []map[string]string {
	origin := originOf(baseURL)
	var out []map[string]string
	for _, a := range s.Articles() {
		out = append(out, map[string]string{"url": origin + a.URL, "title": a.Title, "author": a.Author, "date": a.Date})
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
		if id, ok := s.articleID(path); ok {
			t.articles = append(t.articles, id)
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
			if _, seen := t.kinds[u]; seen || (obeyRobots && strings.HasPrefix(u, "/drafts/")) {
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
	sort.Ints(t.articles)
	t.articles = dedupe(t.articles)
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

// articleID returns the id of the article at path.
func (s *Site) articleID(path string) (int, bool) {
	i := strings.LastIndexByte(path, '-')
	if !strings.HasPrefix(path, "/article/") || i < 0 {
		return 0, false
	}
	id, ok := number(path[i+1:])
	if !ok || id > s.c.n || s.c.urls[id] != path {
		return 0, false
	}
	return id, true
}
