package sitetest

import "github.com/streamcrawl/streamcrawl/spiders/internal/sitekit"

// itemRules are the entries of the spider's items list: one "article" item per page with
// an <article>, with the fields of ExpectedItems.
const itemRules = `  - type: article
    when: "article"
    fields:
      url: "link[rel=canonical]::attr(href)"
      title: "article h1::text"
      author: "article .author::text"
      date: "article time::attr(datetime)"
`

// SpiderYAML returns a YAML spider called name that crawls the site served at baseURL
// (e.g. "http://127.0.0.1:8080/"): it follows every a[href] on the site's host and
// stores the items of itemRules. allowed_domains is the host of baseURL without its port.
func (s *Site) SpiderYAML(name, baseURL string) string {
	return sitekit.SpiderYAML(name, baseURL, itemRules)
}
