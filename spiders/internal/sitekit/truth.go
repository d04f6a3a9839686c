package sitekit

import (
	"net/url"
	"sort"
	"strings"
	"sync"
)

// RenderFunc renders a site: it appends the answer to path?query, with absolute links
// built on origin ("http://host:port"), to b and returns it with its status and
// content type.
type RenderFunc func(b []byte, origin, path, query string) ([]byte, int, string)

// Truth is what a crawl of a site from / reaches. It is shared: do not modify it.
type Truth struct {
	URLs  []string        // every path?query reached, sorted
	Kinds map[string]Kind // what each of URLs answers
	IDs   []int           // Crawler.ID of every HTML page reached, sorted, without repeats
}

// URLsOf returns, sorted, the URLs that answer with kind k.
func (t *Truth) URLsOf(k Kind) []string {
	var out []string
	for _, u := range t.URLs {
		if t.Kinds[u] == k {
			out = append(out, u)
		}
	}
	return out
}

// Crawler computes a site's ground truth by a breadth-first crawl of its rendered
// pages from /, in process: it follows every a[href] on the site's host of every HTML
// page, strips fragments and drops offsite and non-http(s) links. It caches one Truth
// per obeyRobots and is safe for concurrent use; do not copy it after first use.
type Crawler struct {
	// Host is the host the site is rendered for, e.g. "demosite.invalid". Required.
	Host string
	// Render renders the site, but its /robots.txt (see Disallow). Required.
	Render RenderFunc
	// Classify returns the kind of a rendered answer; only HTML pages are followed.
	// Nil means Classify.
	Classify func(status int, ctype string) Kind
	// Disallow is the path prefix the site's /robots.txt disallows to every user agent
	// (the Crawler answers /robots.txt itself): with obeyRobots, URLs under it are
	// neither reached nor included. "" disallows nothing.
	Disallow string
	// Canonical, when not nil, rewrites every reached URL (see Resolver.Canonical).
	Canonical func(path, rawQuery string) string
	// ID returns the id of the item on the HTML page at path, if it has one; the ids
	// of the pages reached go to Truth.IDs. Nil means no page has one.
	ID func(path string) (int, bool)

	mu    sync.Mutex
	truth map[bool]*Truth // by obeyRobots
}

// origin returns the origin the site is rendered with for its ground truth.
func (c *Crawler) origin() string { return "http://" + c.Host }

func (c *Crawler) classify(status int, ctype string) Kind {
	if c.Classify == nil {
		return Classify(status, ctype)
	}
	return c.Classify(status, ctype)
}

// render renders the site: its /robots.txt from Disallow, every other answer with Render.
func (c *Crawler) render(b []byte, origin, path, query string) ([]byte, int, string) {
	if path == "/robots.txt" {
		p := Page{B: b}
		return p.Robots(c.Disallow)
	}
	return c.Render(b, origin, path, query)
}

// KindOf returns what the site answers to pathQuery (path with optional ?query).
func (c *Crawler) KindOf(pathQuery string) Kind {
	path, query, _ := strings.Cut(pathQuery, "?")
	_, status, ctype := c.render(nil, c.origin(), path, query)
	return c.classify(status, ctype)
}

// Truth crawls the site once per obeyRobots and returns the cached result.
func (c *Crawler) Truth(obeyRobots bool) *Truth {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.truth[obeyRobots]; ok {
		return t
	}
	t := c.crawl(obeyRobots)
	if c.truth == nil {
		c.truth = map[bool]*Truth{}
	}
	c.truth[obeyRobots] = t
	return t
}

// Reachable returns a copy of Truth(obeyRobots).URLs: every path?query reached, sorted.
func (c *Crawler) Reachable(obeyRobots bool) []string {
	return append([]string(nil), c.Truth(obeyRobots).URLs...)
}

// Items returns item(id) for the ID of every item page of s reached (robots.txt
// obeyed), by ID.
func Items[T any](s *Site, item func(id int) T) []T {
	ids := s.truth.Truth(true).IDs
	out := make([]T, 0, len(ids))
	for _, id := range ids {
		out = append(out, item(id))
	}
	return out
}

// Expected returns fields(item) for each item, in order, with its "url" (a path)
// made absolute against the origin of baseURL: the items a correct crawl of the site
// served at baseURL stores.
func Expected[T any](items []T, baseURL string, fields func(T) map[string]string) []map[string]string {
	origin := OriginOf(baseURL)
	var out []map[string]string
	for _, it := range items {
		f := fields(it)
		f["url"] = origin + f["url"]
		out = append(out, f)
	}
	return out
}

// crawl is a breadth-first crawl of the site from /, in process, over Render.
func (c *Crawler) crawl(obeyRobots bool) *Truth {
	origin := c.origin()
	t := &Truth{Kinds: map[string]Kind{}}
	r := &Resolver{Origin: origin, Host: c.Host, Canonical: c.Canonical}
	queue := []string{"/"}
	t.Kinds["/"] = 0
	var buf []byte
	for len(queue) > 0 {
		pq := queue[0]
		queue = queue[1:]
		path, query, _ := strings.Cut(pq, "?")
		var status int
		var ctype string
		buf, status, ctype = c.render(buf[:0], origin, path, query)
		k := c.classify(status, ctype)
		t.Kinds[pq] = k
		if k != HTML {
			continue
		}
		if c.ID != nil {
			if id, ok := c.ID(path); ok {
				t.IDs = append(t.IDs, id)
			}
		}
		base, err := url.Parse(origin + pq)
		if err != nil {
			continue
		}
		EachHref(buf, func(href string) {
			u, ok := r.Resolve(base, href)
			if !ok {
				return
			}
			if _, seen := t.Kinds[u]; seen || (obeyRobots && c.Disallow != "" && strings.HasPrefix(u, c.Disallow)) {
				return
			}
			t.Kinds[u] = 0
			queue = append(queue, u)
		})
	}
	for u := range t.Kinds {
		t.URLs = append(t.URLs, u)
	}
	sort.Strings(t.URLs)
	sort.Ints(t.IDs)
	t.IDs = dedupe(t.IDs)
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
