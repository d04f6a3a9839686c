package fleet_test

import (
	"testing"

	"github.com/streamcrawl/streamcrawl/handlers/fleet"
	"github.com/streamcrawl/streamcrawl/spiders"
)

func TestSharedHosts(t *testing.T) {
	shop := &spiders.Spider{Name: "shop", AllowedDomains: []string{"shop.example"}, StartURLs: []string{"https://shop.example/"}}
	news := &spiders.Spider{Name: "news", AllowedDomains: []string{"news.example"},
		StartURLs: []string{"https://news.example/", "http://cdn.example:8080/feed"}}
	blog := &spiders.Spider{Name: "blog", AllowedDomains: []string{"example"}, StartURLs: []string{"https://blog.example/"}}
	broad := &spiders.Spider{Name: "broad", StartURLs: []string{"https://start.example/"}}
	broad2 := &spiders.Spider{Name: "broad2"}
	tests := []struct {
		name   string
		fleet  []*spiders.Spider
		shared map[string]bool
	}{
		{"one spider shares nothing", []*spiders.Spider{broad}, map[string]bool{"start.example": false, "any.example": false}},
		{"disjoint domains share nothing", []*spiders.Spider{shop, news}, map[string]bool{"shop.example": false, "news.example": false, "cdn.example:8080": false}},
		{"a parent domain reaches its subdomains, on any port", []*spiders.Spider{shop, blog},
			map[string]bool{"shop.example": true, "www.shop.example:8443": true, "blog.example": false, "news.example": false}},
		{"a start URL's host is reached outside the allowed domains", []*spiders.Spider{news, broad},
			map[string]bool{"cdn.example:8080": true, "cdn.example": false, "news.example": true, "elsewhere.test": false}},
		{"a spider without allowed domains reaches every host", []*spiders.Spider{shop, broad},
			map[string]bool{"shop.example": true, "sub.shop.example": true, "other.test": false}},
		{"two without allowed domains share every host", []*spiders.Spider{broad, broad2}, map[string]bool{"other.test": true, "[::1]:8080": true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			shared := fleet.SharedHosts(tc.fleet)
			for host, want := range tc.shared {
				if got := shared(host); got != want {
					t.Errorf("shared(%q) = %v, want %v", host, got, want)
				}
			}
		})
	}
}
