package demosite

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/streamcrawl/streamcrawl/spiders/internal/sitekit"
)

const testOrigin = "http://127.0.0.1:8080"

func renderPage(t testing.TB, s *Site, pathQuery string) ([]byte, int) {
	t.Helper()
	path, query, _ := strings.Cut(pathQuery, "?")
	b, status, _ := s.render(nil, testOrigin, path, query)
	return b, status
}

func TestDeterministic(t *testing.T) {
	a, b := New(300), New(300)
	ra, rb := a.Reachable(false), b.Reachable(false)
	if !slices.Equal(ra, rb) {
		t.Fatalf("reachable differs between two New(300)")
	}
	for _, u := range ra {
		pa, _ := renderPage(t, a, u)
		pb, _ := renderPage(t, b, u)
		if !bytes.Equal(pa, pb) {
			t.Fatalf("%s: pages differ between two New(300)", u)
		}
	}
	if slices.Equal(ra, New(400).Reachable(false)) {
		t.Errorf("New(300) and New(400) have the same reachable URLs")
	}
}

func TestGroundTruth(t *testing.T) {
	s := New(500)
	all := s.Reachable(false)
	polite := s.Reachable(true)
	has := func(list []string, u string) bool { _, ok := slices.BinarySearch(list, u); return ok }

	for _, u := range []string{
		"/", "/c/kitchen", "/c/kitchen?page=2", "/p/1", "/p/3?utm_source=related",
		"/p/1?utm_source=home&utm_medium=banner", "/p/999999", "/missing/kitchen-gift-guide",
		"/flaky/1", "/feed.json", "/img/1.png", "/private/x", "/private/offers",
	} {
		if !has(all, u) {
			t.Errorf("Reachable(false) lacks %s", u)
		}
	}
	for _, u := range []string{"/private/x", "/private/offers"} {
		if has(polite, u) {
			t.Errorf("Reachable(true) has %s", u)
		}
	}
	if len(all)-len(polite) != 2 {
		t.Errorf("robots.txt hides %d URLs, want 2", len(all)-len(polite))
	}
	for _, u := range all {
		if strings.Contains(u, "#") || !strings.HasPrefix(u, "/") {
			t.Errorf("reachable URL %q is not a fragment-free path", u)
		}
	}

	want := map[Kind][]string{
		NotFound:    {"/p/999999", "/missing/kitchen-gift-guide"},
		ServerError: {"/flaky/1", "/flaky/2", "/flaky/3"},
		NonHTML:     {"/feed.json", "/img/1.png"},
		HTML:        {"/", "/p/3?utm_source=related"},
	}
	for k, urls := range want {
		got := s.ReachableKind(false, k)
		for _, u := range urls {
			if !has(got, u) {
				t.Errorf("ReachableKind(%v) lacks %s", k, u)
			}
			if s.KindOf(u) != k {
				t.Errorf("KindOf(%s) = %v, want %v", u, s.KindOf(u), k)
			}
		}
	}
	sum := 0
	for _, k := range []Kind{HTML, NotFound, ServerError, NonHTML} {
		sum += len(s.ReachableKind(false, k))
	}
	if sum != len(all) {
		t.Errorf("kinds cover %d URLs, reachable has %d", sum, len(all))
	}

	products := s.Products()
	if len(products) != s.cat.nProducts {
		t.Errorf("Products() = %d, want every product (%d)", len(products), s.cat.nProducts)
	}
	tracking := 0
	for _, u := range all {
		if strings.Contains(u, "utm_") {
			tracking++
		}
	}
	if tracking < len(products)/trackingEvery {
		t.Errorf("%d tracking variants, want at least %d", tracking, len(products)/trackingEvery)
	}
}

func TestSize(t *testing.T) {
	for _, n := range []int{10, 100, 2000} {
		got := len(New(n).Reachable(false))
		if got < n*97/100 || got > n*103/100+10 {
			t.Errorf("New(%d) has %d reachable URLs, want about %d", n, got, n)
		}
	}
}

func TestPageSizes(t *testing.T) {
	s := New(2000)
	for _, u := range []string{"/p/1", "/p/17", "/p/1646", "/c/kitchen", "/c/pets?page=3", "/"} {
		b, status := renderPage(t, s, u)
		if status != http.StatusOK {
			t.Fatalf("%s: status %d", u, status)
		}
		if strings.HasPrefix(u, "/p/") && (len(b) < 12<<10 || len(b) > 20<<10) {
			t.Errorf("%s is %d bytes, want 12-20 KB", u, len(b))
		}
		if !strings.HasPrefix(u, "/p/") && bytes.Contains(b, []byte(`class="product"`)) {
			t.Errorf("%s has a div.product", u)
		}
	}
}

// The fields are read from the served HTML independently of the renderer.
var (
	reCanonical = regexp.MustCompile(`<link rel="canonical" href="([^"]*)">`)
	reName      = regexp.MustCompile(`<h1 class="product-name">([^<]*)</h1>`)
	rePrice     = regexp.MustCompile(`<span class="price">([^<]*)</span>`)
	reSKU       = regexp.MustCompile(`<span class="sku">([^<]*)</span>`)
)

func TestExpectedItemsMatchPages(t *testing.T) {
	s := New(200)
	srv := httptest.NewServer(s)
	defer srv.Close()
	items := s.ExpectedItems(srv.URL + "/")
	if len(items) != len(s.Products()) {
		t.Fatalf("%d items for %d products", len(items), len(s.Products()))
	}
	for _, p := range s.Products()[:30] {
		for _, u := range []string{p.URL, p.URL + "?utm_source=related"} {
			body := sitekit.Get(t, srv.URL+u, http.StatusOK)
			got := map[string]string{
				"url":   sitekit.Field(reCanonical, body),
				"name":  sitekit.Field(reName, body),
				"price": sitekit.Field(rePrice, body),
				"sku":   sitekit.Field(reSKU, body),
			}
			want := items[p.ID-1]
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s: (-want +got)\n-%v\n+%v", u, want, got)
			}
		}
	}
}

func TestHandler(t *testing.T) {
	s := New(100)
	srv := httptest.NewServer(s)
	defer srv.Close()

	if got := sitekit.Get(t, srv.URL+"/robots.txt", http.StatusOK); !strings.Contains(got, "Disallow: /private/") {
		t.Errorf("robots.txt = %q", got)
	}
	sitekit.Get(t, srv.URL+"/private/x", http.StatusOK)
	sitekit.Get(t, srv.URL+"/p/999999", http.StatusNotFound)
	sitekit.Get(t, srv.URL+"/missing/x", http.StatusNotFound)
	sitekit.Get(t, srv.URL+"/flaky/1", http.StatusInternalServerError)
	sitekit.Get(t, srv.URL+"/c/kitchen?page=99", http.StatusNotFound)

	home := sitekit.Get(t, srv.URL+"/", http.StatusOK)
	if !strings.Contains(home, `href="`+srv.URL+`/"`) {
		t.Errorf("home page has no absolute link to %s/", srv.URL)
	}
	if n := strings.Count(home, `href="/c/kitchen"`); n < 2 {
		t.Errorf("home page links /c/kitchen %d times, want duplicates", n)
	}
	for _, want := range []string{`href="http://example.com/about"`, `href="#top"`, `href="mailto:`, `href="c/kitchen"`} {
		if !strings.Contains(home, want) {
			t.Errorf("home page lacks %s", want)
		}
	}
	if p := sitekit.Get(t, srv.URL+"/p/4", http.StatusOK); !strings.Contains(p, `<a href="5">`) {
		t.Errorf("/p/4 has no relative link to product 5")
	}

	res, err := http.Get(srv.URL + "/img/1.png")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "image/png" {
		t.Errorf("/img/1.png Content-Type = %q", ct)
	}
}

func TestCountingConcurrent(t *testing.T) {
	s := New(100)
	srv := httptest.NewServer(s)
	defer srv.Close()
	urls := []string{"/", "/p/1", "/p/1?utm_source=related", "/c/garden?page=1", "/p/999999"}
	const workers, rounds = 8, 25
	sitekit.GetConcurrently(t, srv.URL, urls, workers, rounds)
	got := s.Requests()
	for _, u := range urls {
		if got[u] != workers*rounds {
			t.Errorf("Requests()[%q] = %d, want %d", u, got[u], workers*rounds)
		}
	}
	if len(got) != len(urls) {
		t.Errorf("Requests() has %d keys, want %d: %v", len(got), len(urls), got)
	}
	if n := s.TotalRequests(); n != int64(workers*rounds*len(urls)) {
		t.Errorf("TotalRequests() = %d, want %d", n, workers*rounds*len(urls))
	}
	s.Reset()
	if s.TotalRequests() != 0 || len(s.Requests()) != 0 {
		t.Errorf("Reset left %d requests", s.TotalRequests())
	}
}

func TestSpiderYAML(t *testing.T) {
	y := New(50).SpiderYAML("shop", "http://127.0.0.1:8080/")
	for _, want := range []string{"name: shop\n", "start_urls: [http://127.0.0.1:8080/]\n", "allowed_domains: [127.0.0.1]\n", `when: "div.product"`} {
		if !strings.Contains(y, want) {
			t.Errorf("SpiderYAML lacks %q:\n%s", want, y)
		}
	}
}

func BenchmarkServeHTTP(b *testing.B) {
	s := New(2000)
	urls := s.Reachable(true)
	reqs := sitekit.NewRequests(b, "127.0.0.1:8080", urls)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		w := &sitekit.Discard{H: http.Header{}}
		i := 0
		for pb.Next() {
			s.ServeHTTP(w, reqs[i%len(reqs)])
			i += 7
		}
	})
}

// TestSizeAboveHalfMillion: the site grows past 500,000 pages (a 1M-page crawl) and a
// site of 500,000 pages or fewer is the one it always was (416,644 products in 12
// categories at 500,000).
func TestSizeAboveHalfMillion(t *testing.T) {
	for _, c := range []struct{ pages, products int }{{500_000, 416_644}, {1_000_000, 833_305}} {
		if c.pages > maxPages {
			t.Fatalf("maxPages %d is below %d", maxPages, c.pages)
		}
		if p, k := sizeFor(c.pages); p != c.products || k != 12 {
			t.Errorf("%d pages: %d products in %d categories, want %d in 12", c.pages, p, k, c.products)
		}
	}
}
