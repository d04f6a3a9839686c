package demosite

import "github.com/streamcrawl/streamcrawl/spiders/internal/sitekit"

// ItemRules are the entries of a YAML spider's items list that scrape the shop: one
// "product" item per page with a div.product, with the fields of ExpectedItems. The
// spider of SpiderYAML uses them; a spider with other settings (a benchmark's) can too.
const ItemRules = `  - type: product
    when: "div.product"
    fields:
      url: "link[rel=canonical]::attr(href)"
      name: ".product-name::text"
      price: ".price::text"
      sku: ".sku::text"
`

// SpiderYAML returns a YAML spider called name that crawls the site served at baseURL
// (e.g. "http://127.0.0.1:8080/"): it follows every a[href] on the site's host and
// stores the items of ItemRules. allowed_domains is the host of baseURL without its port.
func (s *Site) SpiderYAML(name, baseURL string) string {
	return sitekit.SpiderYAML(name, baseURL, ItemRules)
}
