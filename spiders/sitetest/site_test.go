package sitetest

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

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
}

func TestGroundTruth(t *testing.T) {
	s := New(1000)
	all := s.Reachable(false)
	polite := s.Reachable(true)
	has := func(list []string, u string) bool { _, ok := slices.BinarySearch(list, u); return ok }
	arts := s.Articles()
	if len(arts) != s.c.n {
		t.Fatalf("Articles() = %d, want every article (%d)", len(arts), s.c.n)
	}
	for _, u := range []string{
		"/", "/about", arts[0].URL, arts[len(arts)-1].URL, "/archive/2012/01", "/tag/go", "/tag/go?page=2",
		"/author/sam-oneill", "/search?q=go&sort=date", "/search?q=go&sort=title", "/article/removed-post",
		"/broken/1", "/broken/2", "/feed.xml", "/drafts/upcoming",
	} {
		if !has(all, u) {
			t.Errorf("Reachable(false) lacks %s", u)
		}
	}
	if has(polite, "/drafts/upcoming") || len(all)-len(polite) != 1 {
		t.Errorf("robots.txt hides %d URLs, want only /drafts/upcoming", len(all)-len(polite))
	}
	for _, u := range all {
		path, query, _ := strings.Cut(u, "?")
		if Canonical(path, query) != u || strings.Contains(u, "#") {
			t.Errorf("reachable URL %q is not canonical", u)
		}
	}
	for k, urls := range map[Kind][]string{
		NotFound:    {"/article/removed-post"},
		ServerError: {"/broken/1", "/broken/2"},
		NonHTML:     {"/feed.xml"},
		HTML:        {"/", "/search?q=go&sort=date", "/search?sort=date&q=go"},
	} {
		for _, u := range urls {
			if got := s.KindOf(u); got != k {
				t.Errorf("KindOf(%s) = %v, want %v", u, got, k)
			}
		}
		if got := s.ReachableKind(false, k); len(got) < len(urls)-1 {
			t.Errorf("ReachableKind(%v) = %v", k, got)
		}
	}
}

func TestQueryOrderVariantsLinked(t *testing.T) {
	s := New(500)
	qFirst, sortFirst := 0, 0
	for _, u := range s.ReachableKind(false, HTML) {
		b, _ := renderPage(t, s, u)
		qFirst += bytes.Count(b, []byte(`href="/search?q=`))
		sortFirst += bytes.Count(b, []byte(`href="/search?sort=`))
	}
	if qFirst == 0 || sortFirst == 0 {
		t.Errorf("search links with q first: %d, sort first: %d; want both orders", qFirst, sortFirst)
	}
}

func TestNextArticleChain(t *testing.T) {
	s := New(300)
	arts := s.Articles()
	for i, a := range arts[:len(arts)-1] {
		b, _ := renderPage(t, s, a.URL)
		if want := `rel="next" href="` + testOrigin + arts[i+1].URL + `"`; !bytes.Contains(b, []byte(want)) {
			t.Fatalf("%s lacks %s", a.URL, want)
		}
	}
}

func TestSize(t *testing.T) {
	for _, n := range []int{60, 100, 2000, 20000} {
		if n == 20000 && testing.Short() {
			continue
		}
		start := time.Now()
		s := New(n)
		got := len(s.Reachable(false))
		took := time.Since(start)
		if got < n*97/100 || got > n*103/100 {
			t.Errorf("New(%d) has %d reachable URLs, want about %d", n, got, n)
		}
		if took > 2*time.Second && !raceEnabled {
			t.Errorf("New(%d) ground truth took %v, want < 2s", n, took)
		}
	}
}

var (
	reCanonical = regexp.MustCompile(`<link rel="canonical" href="([^"]*)">`)
	reTitle     = regexp.MustCompile(`<article>\n<h1>([^<]*)</h1>`)
	reAuthor    = regexp.MustCompile(`class="author" href="[^"]*">([^<]*)</a>`)
	reDate      = regexp.MustCompile(`<time datetime="([^"]*)">`)
)

func TestExpectedItemsMatchPages(t *testing.T) {
	s := New(200)
	srv := httptest.NewServer(s)
	defer srv.Close()
	items := s.ExpectedItems(srv.URL)
	for i, a := range s.Articles() {
		body := sitekit.Get(t, srv.URL+a.URL, http.StatusOK)
		got := map[string]string{
			"url": sitekit.Field(reCanonical, body), "title": sitekit.Field(reTitle, body),
			"author": sitekit.Field(reAuthor, body), "date": sitekit.Field(reDate, body),
		}
		if fmt.Sprint(got) != fmt.Sprint(items[i]) {
			t.Errorf("%s: (-want +got)\n-%v\n+%v", a.URL, items[i], got)
		}
	}
	for _, u := range s.ReachableKind(false, HTML) {
		if _, ok := s.articleID(u); !ok && strings.Contains(sitekit.Get(t, srv.URL+u, http.StatusOK), "<article") {
			t.Errorf("%s is not an article page but has an <article>", u)
		}
	}
}

func TestHandler(t *testing.T) {
	s := New(200)
	srv := httptest.NewServer(s)
	defer srv.Close()
	if got := sitekit.Get(t, srv.URL+"/robots.txt", http.StatusOK); !strings.Contains(got, "Disallow: /drafts/") {
		t.Errorf("robots.txt = %q", got)
	}
	sitekit.Get(t, srv.URL+"/drafts/upcoming", http.StatusOK)
	sitekit.Get(t, srv.URL+"/article/removed-post", http.StatusNotFound)
	sitekit.Get(t, srv.URL+"/broken/2", http.StatusInternalServerError)
	sitekit.Get(t, srv.URL+"/tag/go?page=999", http.StatusNotFound)
	sitekit.Get(t, srv.URL+"/search?q=nope&sort=date", http.StatusNotFound)
	a := sitekit.Get(t, srv.URL+"/search?q=go&sort=date", http.StatusOK)
	b := sitekit.Get(t, srv.URL+"/search?sort=date&q=go", http.StatusOK)
	if a != b {
		t.Errorf("query parameter order changes the search page")
	}
	if home := sitekit.Get(t, srv.URL+"/", http.StatusOK); !strings.Contains(home, `href="`+srv.URL+`/"`) {
		t.Errorf("home page has no absolute link to %s/", srv.URL)
	}
	if got := s.Requests()["/search?q=go&sort=date"]; got != 2 {
		t.Errorf("both orders of /search?q=go&sort=date counted %d times under the canonical key, want 2", got)
	}
}

func TestCountingConcurrent(t *testing.T) {
	s := New(100)
	srv := httptest.NewServer(s)
	defer srv.Close()
	urls := []string{"/", "/about", "/search?q=go&sort=title", "/search?sort=title&q=go", "/broken/1"}
	const workers, rounds = 8, 25
	sitekit.GetConcurrently(t, srv.URL, urls, workers, rounds)
	want := map[string]int{"/": 200, "/about": 200, "/search?q=go&sort=title": 400, "/broken/1": 200}
	if got := s.Requests(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Requests() (-want +got)\n-%v\n+%v", want, got)
	}
	if n := s.TotalRequests(); n != int64(workers*rounds*len(urls)) {
		t.Errorf("TotalRequests() = %d, want %d", n, workers*rounds*len(urls))
	}
	s.Reset()
	if s.TotalRequests() != 0 || len(s.Requests()) != 0 {
		t.Errorf("Reset left %d requests", s.TotalRequests())
	}
}

func TestCanonical(t *testing.T) {
	for _, c := range []struct{ path, query, want string }{
		{"/a", "", "/a"},
		{"/a", "x=1", "/a?x=1"},
		{"/search", "sort=date&q=go", "/search?q=go&sort=date"},
		{"/s", "b=2&&a=1&", "/s?a=1&b=2"},
	} {
		if got := Canonical(c.path, c.query); got != c.want {
			t.Errorf("Canonical(%q, %q) = %q, want %q", c.path, c.query, got, c.want)
		}
	}
}

func TestSpiderYAML(t *testing.T) {
	y := New(60).SpiderYAML("news", "http://localhost:9000")
	for _, want := range []string{"name: news\n", "start_urls: [http://localhost:9000/]\n", "allowed_domains: [localhost]\n", "type: article", `when: "article"`} {
		if !strings.Contains(y, want) {
			t.Errorf("SpiderYAML lacks %q:\n%s", want, y)
		}
	}
}

func BenchmarkServeHTTP(b *testing.B) {
	s := New(20000)
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

func BenchmarkGroundTruth(b *testing.B) {
	for b.Loop() {
		New(20000).Reachable(false)
	}
}
