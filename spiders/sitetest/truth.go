package sitetest

import (
	"strings"

	"github.com/streamcrawl/streamcrawl/spiders/internal/sitekit"
)

// Kind is what a URL of the site answers; its String is the kind's name.
type Kind = sitekit.Kind

// Kinds of answers.
const (
	HTML        = sitekit.HTML        // a 200 text/html page
	NotFound    = sitekit.NotFound    // a 404
	ServerError = sitekit.ServerError // a 500
	NonHTML     = sitekit.NonHTML     // a 200 answer that is not HTML (RSS, text)
)

// newTruth returns the crawler that computes the site's ground truth from render.
func (s *Site) newTruth() *sitekit.Crawler {
	return &sitekit.Crawler{
		Host:      "sitetest.invalid",
		Render:    s.render,
		Disallow:  disallowed,
		Canonical: Canonical,
		ID:        s.articleID,
	}
}

// Articles returns every reachable article, by ID.
func (s *Site) Articles() []Article { return sitekit.Items(s.base, s.c.article) }

// ExpectedItems returns the fields a correct crawl of the site served at baseURL
// (e.g. "http://127.0.0.1:8080/") stores with the spider of SpiderYAML: one item per
// article (url is the absolute canonical URL, date is YYYY-MM-DD), by article ID.
func (s *Site) ExpectedItems(baseURL string) []map[string]string {
	return sitekit.Expected(s.Articles(), baseURL, func(a Article) map[string]string {
		return map[string]string{"url": a.URL, "title": a.Title, "author": a.Author, "date": a.Date}
	})
}

// articleID returns the id of the article at path.
func (s *Site) articleID(path string) (int, bool) {
	i := strings.LastIndexByte(path, '-')
	if !strings.HasPrefix(path, "/article/") || i < 0 {
		return 0, false
	}
	id, ok := sitekit.Number(path[i+1:])
	if !ok || id > s.c.n || s.c.urls[id] != path {
		return 0, false
	}
	return id, true
}
