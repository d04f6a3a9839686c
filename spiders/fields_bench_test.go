package spiders

import (
	"net/http/httptest"
	"testing"

	"github.com/streamcrawl/streamcrawl/spiders/datasite"
	"github.com/streamcrawl/streamcrawl/spiders/demosite"
)

// BenchmarkFields runs the rules of a YAML spider on a parsed page (HTML parsing left
// out, as in BenchmarkYAMLParseParsedDoc): the demo shop's product page with the plain
// ItemRules and with the typed TypedItemRules, and the data site's product page with
// its rules, which read JSON-LD and microdata (once per page) as well.
func BenchmarkFields(b *testing.B) {
	shop := httptest.NewServer(demosite.New(200))
	defer shop.Close()
	data := httptest.NewServer(datasite.New())
	defer data.Close()
	cases := []struct {
		name, items, url string
	}{
		{"demo/plain", demosite.ItemRules, shop.URL + "/p/17"},
		{"demo/typed", demosite.TypedItemRules, shop.URL + "/p/17"},
		{"data/product", datasite.ItemRules, data.URL + datasite.ProductPath},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			sp := mustParse(b, "name: bench\nstart_urls: [http://127.0.0.1/]\nitems:\n"+c.items)
			res := getPage(b, c.url)
			if _, err := res.Doc(); err != nil {
				b.Fatal(err)
			}
			cb, _ := sp.Callback("parse")
			b.ReportAllocs()
			for b.Loop() {
				var out Output
				if err := cb(b.Context(), res, &out); err != nil {
					b.Fatal(err)
				}
				if len(out.Items) == 0 {
					b.Fatal("no item")
				}
			}
		})
	}
}
