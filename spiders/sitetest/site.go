package sitetest

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/streamcrawl/streamcrawl/spiders/internal/sitekit"
)

// Site is a generated news site. It is an http.Handler, safe for concurrent use; its
// pages depend only on the number it was built with and the Host header of the request.
//
// Its methods ServeHTTP, Requests, TotalRequests, Reset, KindOf, Reachable,
// ReachableKind and SpiderYAML are those of sitekit.Site (documented in
// spiders/internal/sitekit), which every generated site shares. It counts a
// request, and lists a reachable URL, under its canonical path?query (see Canonical),
// so KindOf takes query parameters in any order; with obeyRobots the reachable URLs
// leave out /drafts/. SpiderYAML's spider stores one "article" item per article.
type Site struct {
	*base
	c       *content
	authors map[string]int // slug -> index
	tags    map[string]int // tag -> index
}

// New returns the site with about pages reachable URLs (at least 60, at most 500,000).
// The same pages always gives the same site.
func New(pages int) *Site {
	s := &Site{c: newContent(pages), authors: map[string]int{}, tags: map[string]int{}}
	for i, a := range authors {
		s.authors[a.slug] = i
	}
	for i, t := range tags {
		s.tags[t] = i
	}
	s.base = sitekit.NewSite(s.newTruth(), requestKey, 16<<10, itemRules)
	return s
}

// Content types served by the site.
const (
	ctRSS = "application/rss+xml"
)

// disallowed is the path prefix the site's robots.txt disallows (see sitekit.Crawler).
const disallowed = "/drafts/"

// homeLink is the text of an error page's link to the home page.
const homeLink = "Front page"

// render appends the answer to path?query to b and returns it with its status and
// content type. The order of query parameters does not matter. It is the single
// source of every byte the site serves but its robots.txt, which sitekit writes from
// disallowed.
func (s *Site) render(b []byte, origin, path, query string) ([]byte, int, string) {
	p := &page{B: b, Origin: origin}
	c := s.c
	pageNo := 1
	if v := sitekit.QueryValue(query, "page"); v != "" {
		n, ok := sitekit.Number(v)
		if !ok {
			return notFound(p)
		}
		pageNo = n
	}
	listing := func(title, base string, ids []int, extra func(*page)) ([]byte, int, string) {
		if pageNo > pagesOf(len(ids)) {
			return notFound(p)
		}
		s.listing(p, title, base, ids, pageNo, extra)
		return p.B, http.StatusOK, sitekit.HTMLType
	}
	switch {
	case path == "/":
		s.home(p)
	case path == "/about":
		s.about(p)
	case strings.HasPrefix(path, "/article/"):
		id, ok := s.articleID(path)
		if !ok {
			return notFound(p)
		}
		s.article(p, id)
	case strings.HasPrefix(path, "/archive/"):
		m, ok := s.monthOf(path[len("/archive/"):])
		if !ok {
			return notFound(p)
		}
		y, mo := c.yearMonth(m)
		return listing(fmt.Sprintf("%s %d", monthNames[mo-1], y), path, c.byMonth[m], nil)
	case strings.HasPrefix(path, "/author/"):
		a, ok := s.authors[path[len("/author/"):]]
		if !ok {
			return notFound(p)
		}
		return listing("Articles by "+authorHTML[a], path, c.byAuthor[a], nil)
	case strings.HasPrefix(path, "/tag/"):
		t, ok := s.tags[path[len("/tag/"):]]
		if !ok {
			return notFound(p)
		}
		return listing("Tagged "+tags[t], path, c.byTag[t], func(p *page) {
			if pageNo != 1 {
				return
			}
			p.S("<p>Search ")
			searchLink(p, tags[t], "date", true)
			searchLink(p, tags[t], "title", false)
			if t < 2 {
				p.S(`<a href="/broken/`)
				p.I(t + 1)
				p.S(`">Most read (beta)</a>`)
			}
			p.S("</p>\n")
		})
	case path == "/search":
		t, ok := s.tags[sitekit.QueryValue(query, "q")]
		by := sitekit.QueryValue(query, "sort")
		if !ok || (by != "date" && by != "title") {
			return notFound(p)
		}
		s.search(p, t, by)
	case strings.HasPrefix(path, "/broken/"):
		if n, ok := sitekit.Number(path[len("/broken/"):]); !ok || n > 2 {
			return notFound(p)
		}
		return p.Error(http.StatusInternalServerError, homeLink)
	case path == "/drafts/upcoming":
		s.draft(p)
	case path == "/feed.xml":
		return s.feed(p), http.StatusOK, ctRSS
	default:
		return notFound(p)
	}
	return p.B, http.StatusOK, sitekit.HTMLType
}

// monthOf parses "<yyyy>/<mm>" into a month index of the archive.
func (s *Site) monthOf(ym string) (int, bool) {
	if len(ym) != 7 || ym[4] != '/' {
		return 0, false
	}
	y, err1 := strconv.Atoi(ym[:4])
	mo, err2 := strconv.Atoi(ym[5:])
	m := (y-2012)*12 + mo - 1
	if err1 != nil || err2 != nil || mo < 1 || mo > 12 || m < 0 || m >= s.c.months {
		return 0, false
	}
	return m, true
}

func notFound(p *page) ([]byte, int, string) { return p.Error(http.StatusNotFound, homeLink) }

// feed writes an RSS feed of the latest 20 articles.
func (s *Site) feed(p *page) []byte {
	c := s.c
	p.S("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<rss version=\"2.0\"><channel><title>The Test Gazette</title><link>")
	p.O()
	p.S("/</link>\n")
	for id := c.n; id > max(0, c.n-20); id-- {
		p.S("<item><title>", c.titles[id], "</title><link>")
		p.O()
		p.S(c.urls[id], "</link><pubDate>", c.dates[id], "</pubDate></item>\n")
	}
	p.S("</channel></rss>\n")
	return p.B
}

// Canonical returns path?query with the query's parameters sorted (as raw key=value
// strings; empty parameters dropped), the form under which the site counts requests
// and lists reachable URLs. A path without a query is returned unchanged.
func Canonical(path, rawQuery string) string {
	if rawQuery == "" {
		return path
	}
	if !strings.Contains(rawQuery, "&") {
		return path + "?" + rawQuery
	}
	parts := strings.Split(rawQuery, "&")
	sort.Strings(parts)
	out := parts[:0]
	for _, kv := range parts {
		if kv != "" {
			out = append(out, kv)
		}
	}
	if len(out) == 0 {
		return path
	}
	return path + "?" + strings.Join(out, "&")
}
