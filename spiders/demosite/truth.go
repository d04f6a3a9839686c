package demosite

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
	NonHTML     = sitekit.NonHTML     // a 200 answer that is not HTML (JSON, PNG, text)
)

// newTruth returns the crawler that computes the site's ground truth from render.
func (s *Site) newTruth() *sitekit.Crawler {
	return &sitekit.Crawler{
		Host:     "demosite.invalid",
		Render:   s.render,
		Disallow: disallowed,
		ID: func(path string) (int, bool) {
			if rest, ok := strings.CutPrefix(path, "/p/"); ok {
				return sitekit.Number(rest)
			}
			return 0, false
		},
	}
}

// Products returns every reachable product, by ID.
func (s *Site) Products() []Product { return sitekit.Items(s.base, s.cat.product) }

// ExpectedItems returns the fields a correct crawl of the site served at baseURL
// (e.g. "http://127.0.0.1:8080/") stores with the spider of SpiderYAML: one item per
// product, url being the absolute canonical URL, by product ID.
func (s *Site) ExpectedItems(baseURL string) []map[string]string {
	return sitekit.Expected(s.Products(), baseURL, func(p Product) map[string]string {
		return map[string]string{"url": p.URL, "name": p.Name, "price": p.Price, "sku": p.SKU}
	})
}
