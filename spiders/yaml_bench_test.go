package spiders

import (
	"fmt"
	"strings"
	"testing"
)

// benchPage returns a product page of about 20 KB with about 70 links.
func benchPage() string {
	var b strings.Builder
	b.WriteString(`<!doctype html><html><head><title>Red shoes | Shop</title>
<link rel="canonical" href="/p/red-shoes"><link rel="next" href="/c/shoes?page=2">
<style>body{font-family:sans-serif}</style></head><body><nav>`)
	for i := 0; i < 30; i++ {
		fmt.Fprintf(&b, `<a href="/c/category-%d">Category %d</a> `, i, i)
	}
	b.WriteString(`</nav><div class="product" data-sku="SKU-1"><h1 class="product-name">Red running shoes</h1>
<span class="price">12.50</span><img class="main" src="/img/red.jpg"><div class="description">`)
	for i := 0; i < 42; i++ {
		fmt.Fprintf(&b, `<p>Paragraph %d of the description, with <em>some</em> emphasis and enough words to make the page realistic, the kind of copy a real shop would write about its products and their many fine qualities, from the soles to the laces, the colours, the sizes on offer and the care they need. `+
			`See <a href="/p/related-%d?ref=desc#top">related product %d</a>.</p>`+"\n", i, i, i)
	}
	b.WriteString(`</div><table class="specs">`)
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&b, `<tr><th>Property %d</th><td>A value for property %d, measured and checked</td></tr>`+"\n", i, i)
	}
	b.WriteString(`</table></div><footer><a href="/private/admin">admin</a> <a href="mailto:shop@example.com">mail</a></footer></body></html>`)
	return b.String()
}

const benchSpider = `
name: shop
start_urls: [http://127.0.0.1:8080/]
allowed_domains: [127.0.0.1]
follow:
  - links: "a[href]"
    allow: ["^/p/", "^/c/"]
    deny: ["^/private/"]
  - links: "link[rel=next]"
items:
  - type: product
    when: "div.product"
    key: [url]
    fields:
      url: "link[rel=canonical]::attr(href)"
      name: ".product-name::text"
      price: ".price::text"
      image: "img.main::attr(src)"
`

// BenchmarkYAMLParse runs the "parse" callback of a YAML spider on a fresh response each
// time, HTML parsing included, as the pipeline does for every page.
func BenchmarkYAMLParse(b *testing.B) {
	sp := mustParse(b, benchSpider)
	page := []byte(benchPage())
	cb, _ := sp.Callback("parse")
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		res := htmlResponse("http://127.0.0.1:8080/p/red-shoes", "")
		res.Body = page
		var out Output
		if err := cb(b.Context(), res, &out); err != nil {
			b.Fatal(err)
		}
		if len(out.Items) != 1 || len(out.Requests) < 70 {
			b.Fatalf("got %d items, %d requests", len(out.Items), len(out.Requests))
		}
	}
}

// BenchmarkYAMLParseParsedDoc is BenchmarkYAMLParse without the HTML parsing: the cost of
// the rules alone.
func BenchmarkYAMLParseParsedDoc(b *testing.B) {
	sp := mustParse(b, benchSpider)
	res := htmlResponse("http://127.0.0.1:8080/p/red-shoes", benchPage())
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
	}
}

func TestBenchPageSize(t *testing.T) {
	page := benchPage()
	res := htmlResponse("http://127.0.0.1:8080/p/red-shoes", page)
	if n, links := len(page), len(res.Links("a, link")); n < 18<<10 || n > 24<<10 || links < 65 || links > 80 {
		t.Errorf("bench page is %d bytes with %d links, want about 20 KB and 70 links", n, links)
	}
}
