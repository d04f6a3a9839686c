package spiders_test

import (
	"bytes"
	"flag"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/streamcrawl/streamcrawl/spiders/demosite"
)

// The parse ceiling: what a page costs to parse with plain goquery, one goroutine, taking
// out what the demo shop's spider takes (every a[href] as an absolute URL, and the four
// item fields of a product page) and nothing else: no fetch, no Redis, no dedup, no
// encoding. It is the floor that a worker's CPU per page is compared with (the figures
// of `streamcrawl-bench bench` and bench-peers). One op is one page of a fixed set of
// the 20,000-page demo shop, in the site's own mix of page kinds; -benchmem's B/op is
// per page too. Sub-benchmarks pad the pages to 13 KB and 25 KB (demosite.SetPageSize);
// -ceiling.page-size adds another size:
//
//	go test ./spiders -run '^$' -bench ParseCeiling -benchmem -args -ceiling.page-size=50000

var ceilingPageSize = flag.Int("ceiling.page-size", 0, "also run BenchmarkParseCeiling on pages padded to this many bytes")

// ceilingPages are the set of pages: every 97th HTML page the site's ground truth
// reaches (robots.txt obeyed), rendered at pageSize, with their URLs.
func ceilingPages(b *testing.B, pageSize int) (urls []*url.URL, bodies [][]byte) {
	b.Helper()
	site := demosite.New(20000)
	site.SetPageSize(pageSize)
	for i, path := range site.ReachableKind(true, demosite.HTML) {
		if i%97 != 0 {
			continue
		}
		rec := httptest.NewRecorder()
		site.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, benchOrigin+path, nil))
		if rec.Code != http.StatusOK {
			continue // the 404 and 500 pages the truth reaches
		}
		u, err := url.Parse(benchOrigin + path)
		if err != nil {
			b.Fatal(err)
		}
		urls, bodies = append(urls, u), append(bodies, rec.Body.Bytes())
	}
	if len(bodies) < 100 {
		b.Fatalf("%d pages, want at least 100", len(bodies))
	}
	return urls, bodies
}

// ceilingItem is what the shop's spider takes from a product page.
type ceilingItem struct{ url, name, price, sku string }

// parseCeiling parses body and returns its absolute links and its item, if any.
func parseCeiling(base *url.URL, body []byte, links []string) ([]string, *ceilingItem, error) {
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(body))
	if err != nil {
		return links, nil, err
	}
	doc.Find("a[href]").Each(func(_ int, a *goquery.Selection) {
		href, _ := a.Attr("href")
		u, err := base.Parse(href)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			return
		}
		u.Fragment, u.RawFragment = "", ""
		links = append(links, u.String())
	})
	if doc.Find("div.product").Length() == 0 {
		return links, nil, nil
	}
	canon, _ := doc.Find("link[rel=canonical]").First().Attr("href")
	return links, &ceilingItem{
		url:   canon,
		name:  strings.TrimSpace(doc.Find(".product-name").First().Text()),
		price: strings.TrimSpace(doc.Find(".price").First().Text()),
		sku:   strings.TrimSpace(doc.Find(".sku").First().Text()),
	}, nil
}

func BenchmarkParseCeiling(b *testing.B) {
	sizes := []struct {
		name string
		size int
	}{{"13KB", 13000}, {"25KB", 25000}}
	if *ceilingPageSize > 0 {
		sizes = append(sizes, struct {
			name string
			size int
		}{"custom", *ceilingPageSize})
	}
	for _, sz := range sizes {
		b.Run(sz.name, func(b *testing.B) {
			urls, bodies := ceilingPages(b, sz.size)
			total, nLinks, nItems := 0, 0, 0
			for i, body := range bodies {
				total += len(body)
				links, it, err := parseCeiling(urls[i], body, nil)
				if err != nil {
					b.Fatal(err)
				}
				nLinks += len(links)
				if it != nil {
					if it.name == "" || it.price == "" || it.sku == "" || !strings.HasPrefix(it.url, "http") {
						b.Fatalf("%s: item %+v has an empty field", urls[i], *it)
					}
					nItems++
				}
			}
			if nItems == 0 || nLinks < 20*len(bodies) {
				b.Fatalf("%d pages gave %d items and %d links", len(bodies), nItems, nLinks)
			}
			b.SetBytes(int64(total / len(bodies)))
			b.ReportAllocs()
			b.ResetTimer()
			var links []string
			for i := 0; i < b.N; i++ {
				k := i % len(bodies)
				var err error
				if links, _, err = parseCeiling(urls[k], bodies[k], links[:0]); err != nil {
					b.Fatal(err)
				}
			}
			// After the loop: ResetTimer drops metrics reported before it.
			b.ReportMetric(float64(total)/float64(len(bodies)), "page-bytes")
			b.ReportMetric(float64(nLinks)/float64(len(bodies)), "links/page")
			b.ReportMetric(float64(len(bodies)), "pages-in-set")
		})
	}
}

// processCPU is this process's user and system CPU time: a benchmark reports it per op
// (cpu-µs/op) beside ns/op, which a machine loaded by other work inflates.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkParseCeilingCPU is BenchmarkParseCeiling's 25 KB pages with the CPU time per
// page (cpu-µs/op) beside the wall time: on a machine loaded by other work, wall time
// counts the waits for a core too, and the bench command's worker figure is CPU time.
func BenchmarkParseCeilingCPU(b *testing.B) {
	urls, bodies := ceilingPages(b, 25000)
	var links []string
	b.ReportAllocs()
	cpu0 := processCPU()
	for i := 0; b.Loop(); i++ {
		var err error
		if links, _, err = parseCeiling(urls[i%len(urls)], bodies[i%len(bodies)], links[:0]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(processCPU()-cpu0)/1e3/float64(b.N), "cpu-µs/op")
}
