package demosite_test

import (
	"os"
	"reflect"
	"testing"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/spiders/demosite"
)

// TestExampleShopSpiderIsTheSitesSpider: examples/shop.yaml, which the README runs
// against `demo-site --addr 127.0.0.1:8080`, is the spider the site writes for that
// address (`--spider-out`) but for the per-host settings, which it leaves at their
// defaults, as the README says.
func TestExampleShopSpiderIsTheSitesSpider(t *testing.T) {
	b, err := os.ReadFile("../../examples/shop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	example, _, err := spiders.Parse("shop.yaml", b)
	if err != nil {
		t.Fatal(err)
	}
	site, _, err := spiders.Parse("site.yaml", []byte(demosite.New(2000).SpiderYAML("shop", "http://127.0.0.1:8080/")))
	if err != nil {
		t.Fatal(err)
	}
	if example.Settings.PerHostConcurrency != 0 || site.Settings.PerHostConcurrency != 32 {
		t.Errorf("per_host_concurrency: example %d, site's %d; want the default (0) and 32",
			example.Settings.PerHostConcurrency, site.Settings.PerHostConcurrency)
	}
	example.Settings.PerHostConcurrency = site.Settings.PerHostConcurrency
	for _, c := range []struct {
		what      string
		got, want any
	}{
		{"name", example.Name, site.Name},
		{"start_urls", example.StartURLs, site.StartURLs},
		{"allowed_domains", example.AllowedDomains, site.AllowedDomains},
		{"items", example.ItemFields, site.ItemFields},
		{"settings", example.Settings, site.Settings},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s (-site's +example's):\n-%#v\n+%#v", c.what, c.want, c.got)
		}
	}
}
