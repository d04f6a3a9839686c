package demosite

import (
	"strings"

	"github.com/streamcrawl/streamcrawl/spiders/internal/sitekit"
)

// Kind is what a URL of the site answers.
type Kind int

// Kinds of answers.
const (
	// HTML is a 200 text/html page.
	HTML = Kind(sitekit.HTML)
	// NotFound is a 404.
	NotFound = Kind(sitekit.NotFound)
	// ServerError is a 500.
	ServerError = Kind(sitekit.ServerError)
	// NonHTML is a 200 answer that is not HTML (JSON, PNG, text).
	NonHTML = Kind(sitekit.NonHTML)
)

// String returns the name of the kind.
func (k Kind) String() string { return sitekit.Kind(k).String() }

// newTruth returns the crawler that computes the site's ground truth from render.
func (s *Site) newTruth() *sitekit.Crawler {
	return &sitekit.Crawler{
		Host:     "demosite.invalid",
		Render:   s.render,
		Disallow: "/private/",
		ID: func(path string) (int, bool) {
			if rest, ok := strings.CutPrefix(path, "/p/"); ok {
				return sitekit.Number(rest)
			}
			return 0, false
		},
	}
}

// KindOf returns what the site answers to pathQuery (path with optional ?query).
func (s *Site) KindOf(pathQuery string) Kind { return Kind(s.truth.KindOf(pathQuery)) }

// Reachable returns, sorted, every path?query a crawler reaches by starting at / and
// following every a[href] on the site's host: fragments stripped, queries kept as
// written, offsite and mailto: links dropped. It includes tracking-parameter variants,
// 404s, 500s and non-HTML resources; with obeyRobots it leaves out /private/. Only 200
// HTML pages are followed. /robots.txt is not linked and so not included.
func (s *Site) Reachable(obeyRobots bool) []string {
	return s.truth.Reachable(obeyRobots)
}

// ReachableKind returns, sorted, the reachable path?query that answer with kind k.
func (s *Site) ReachableKind(obeyRobots bool, k Kind) []string {
	return s.truth.Truth(obeyRobots).URLsOf(sitekit.Kind(k))
}

// Products returns every reachable product, by ID.
func (s *Site) Products() []Product { return sitekit.Items(s.truth, s.cat.product) }

// ExpectedItems returns the fields a correct crawl of the site served at baseURL
// (e.g. "http://127.0.0.1:8080/") stores with the spider of SpiderYAML: one item per
// product, url being the absolute canonical URL, by product ID.
func (s *Site) ExpectedItems(baseURL string) []map[string]string {
	origin := sitekit.OriginOf(baseURL)
	var out []map[string]string
	for _, p := range s.Products() {
		out = append(out, map[string]string{"url": origin + p.URL, "name": p.Name, "price": p.Price, "sku": p.SKU})
	}
	return out
}
