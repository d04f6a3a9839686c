package jssite

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/streamcrawl/streamcrawl/spiders/internal/sitekit"
)

// ItemRules are the items of SpiderYAML: a product per page with a .product (sku,
// name, price), a guide per page with an .guide (slug, title).
const ItemRules = `items:
  - type: product
    when: ".product"
    key: [sku]
    fields:
      sku: ".product .sku"
      name: ".product .name"
      price: ".product .price"
  - type: guide
    when: ".guide"
    key: [slug]
    fields:
      slug: ".guide::attr(data-slug)"
      title: ".guide h1"
`

// SpiderYAML returns a YAML spider called name that crawls the site served at baseURL
// with render (true, false or auto): one follow rule per page type (categories
// scrolled until they stop growing; products and their script redirects; guides;
// brands; the rest), the items of ItemRules, the loopback site allowed.
func (s *Site) SpiderYAML(name, baseURL, render string) string {
	u, err := url.Parse(baseURL)
	host := baseURL
	if err == nil && u.Hostname() != "" {
		host = u.Hostname()
	}
	return fmt.Sprintf(`name: %s
start_urls: [%s]
allowed_domains: [%s]
render: %s
follow:
  - allow: ["^/c/"]
    page:
      wait: {selector: "#list li"}
      actions: [{scroll: {until_idle: true}}]
  - allow: ["^/(p|go)/"]
    page:
      wait: {selector: ".product"}
  - allow: ["^/guide/"]
  - allow: ["^/brand/"]
  - allow: ["^/status$"]
%ssettings:
  concurrency: 16
  per_host_concurrency: 16
  download_timeout: 20s
  allow_networks: [127.0.0.1/32]
`, name, baseURL, host, render, ItemRules)
}

// ExpectedItems returns the items a rendering crawl of SpiderYAML stores, keyed by
// their key field (sku or slug), with their fields.
func (s *Site) ExpectedItems() map[string]map[string]string {
	out := map[string]map[string]string{}
	for i := 1; i <= s.products; i++ {
		out[sku(i)] = map[string]string{"sku": sku(i), "name": name(i), "price": price(i)}
	}
	for g := 1; g <= s.guides; g++ {
		slug := "guide-" + strconv.Itoa(g)
		out[slug] = map[string]string{"slug": slug, "title": s.guideTitle(g)}
	}
	return out
}

func (s *Site) guideTitle(g int) string {
	return fmt.Sprintf("Guide %d: caring for your %s", g, strings.ToLower(nouns[sitekit.Pick(g, 5, len(nouns))]))
}
