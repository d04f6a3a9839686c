package spiders_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/spiders/demosite"
)

// The per-page hot path of the parse stage, one piece at a time, on a product page of
// the demo shop (about 20 KB, 24 items' worth of markup and ~70 links). Run with
// -benchmem; compare builds with benchstat.

const benchOrigin = "http://127.0.0.1:8080"

// benchPage renders one page of the 20,000-page demo shop in memory.
func benchPage(b *testing.B, path string) *spiders.Response {
	b.Helper()
	site := demosite.New(20000)
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, benchOrigin+path, nil)
	site.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		b.Fatalf("GET %s: %d", path, rec.Code)
	}
	r, err := spiders.NewRequest(benchOrigin+path, "")
	if err != nil {
		b.Fatal(err)
	}
	return &spiders.Response{Request: r, URL: r.URL, Status: 200, Headers: rec.Header(), Body: rec.Body.Bytes(),
		FetchedAt: time.Unix(1700000000, 0)}
}

// fresh returns a copy of res without its parsed document.
func fresh(res *spiders.Response) *spiders.Response {
	return &spiders.Response{Request: res.Request, URL: res.URL, Status: res.Status, Headers: res.Headers,
		Body: res.Body, FetchedAt: res.FetchedAt}
}

var canonicalInputs = []string{
	"http://127.0.0.1:8080/p/17",
	"HTTP://Shop.Example.COM:80/a/./b/../c?z=1&a=2&a=1#frag",
	"https://example.com/search?q=red%20shoes&page=2&sort=price",
	"http://127.0.0.1:8080/c/3?page=12&utm_source=x",
}

func BenchmarkCanonicalURL(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := spiders.CanonicalURL(canonicalInputs[i%len(canonicalInputs)]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFingerprintURLs(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := spiders.Fingerprint("GET", canonicalInputs[i%len(canonicalInputs)], nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseHTML is the floor: the HTML parse alone.
func BenchmarkParseHTML(b *testing.B) {
	res := benchPage(b, "/p/17")
	b.SetBytes(int64(len(res.Body)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := spiders.ParseHTML(res.Body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLinks extracts the links of a parsed page (the parse is done once, outside).
func BenchmarkLinks(b *testing.B) {
	res := benchPage(b, "/p/17")
	if _, err := res.Doc(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	n := 0
	for i := 0; i < b.N; i++ {
		n = len(res.Links("a[href]"))
	}
	if n == 0 {
		b.Fatal("no links")
	}
}

// BenchmarkYAMLSpiderPage runs the bench spider's callback on a page: one HTML parse,
// the item's fields and the links to follow from the same document.
func BenchmarkYAMLSpiderPage(b *testing.B) {
	res := benchPage(b, "/p/17")
	// The demo shop's spider (its settings do not matter to a callback).
	sp, _, err := spiders.Parse("bench.yaml", []byte(demosite.New(1000).SpiderYAML("bench", benchOrigin+"/")))
	if err != nil {
		b.Fatal(err)
	}
	cb, err := sp.Callback(spiders.DefaultCallback)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.SetBytes(int64(len(res.Body)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		var out spiders.Output
		if err := cb(ctx, fresh(res), &out); err != nil {
			b.Fatal(err)
		}
		if len(out.Items) != 1 || len(out.Requests) == 0 {
			b.Fatalf("%d items, %d requests; want 1 and some", len(out.Items), len(out.Requests))
		}
	}
}
