package demosite

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/spiders/internal/sitekit"
)

// peerSection returns the list SetPeers adds to a home page, "" when there is none.
func peerSection(home []byte) string {
	i := bytes.Index(home, []byte(`<section class="peers">`))
	if i < 0 {
		return ""
	}
	j := bytes.Index(home[i:], []byte("</section>\n"))
	return string(home[i : i+j+len("</section>\n")])
}

func TestPeersChangeOnlyTheHomePage(t *testing.T) {
	plain, peered := New(300), New(300)
	if err := peered.SetPeers([]string{"http://127.0.0.1:40001", "http://127.0.0.1:40002/", testOrigin}); err != nil {
		t.Fatal(err)
	}
	urls := plain.Reachable(false)
	if !slices.Equal(urls, peered.Reachable(false)) || !slices.Equal(plain.Reachable(true), peered.Reachable(true)) {
		t.Fatalf("peers changed Reachable")
	}
	if fmt.Sprint(plain.ExpectedItems(testOrigin+"/")) != fmt.Sprint(peered.ExpectedItems(testOrigin+"/")) {
		t.Errorf("peers changed ExpectedItems")
	}
	for _, u := range append(urls, "/robots.txt", "/nope") {
		if u == "/" {
			continue
		}
		a, _ := renderPage(t, plain, u)
		b, _ := renderPage(t, peered, u)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: peers changed the page", u)
		}
	}

	home, _ := renderPage(t, peered, "/")
	want := "<section class=\"peers\">\n<h2>Partner shops</h2>\n<ul>\n" +
		"<li><a class=\"peer\" href=\"http://127.0.0.1:40001/\">127.0.0.1:40001</a></li>\n" +
		"<li><a class=\"peer\" href=\"http://127.0.0.1:40002/\">127.0.0.1:40002</a></li>\n" +
		"</ul>\n</section>\n"
	if got := peerSection(home); got != want {
		t.Errorf("peer list (the page's own origin left out) (-want +got)\n-%q\n+%q", want, got)
	}
	plainHome, _ := renderPage(t, plain, "/")
	if !bytes.Equal(bytes.Replace(home, []byte(want), nil, 1), plainHome) {
		t.Errorf("home page with peers differs from the plain one by more than the peer list")
	}

	for _, origins := range [][]string{nil, {testOrigin}} {
		if err := peered.SetPeers(origins); err != nil {
			t.Fatal(err)
		}
		if home, _ := renderPage(t, peered, "/"); !bytes.Equal(home, plainHome) {
			t.Errorf("SetPeers(%q): home page differs from a site without peers", origins)
		}
	}
}

func TestSetPeersInvalid(t *testing.T) {
	s := New(50)
	if err := s.SetPeers([]string{"http://127.0.0.1:40001"}); err != nil {
		t.Fatal(err)
	}
	for _, o := range []string{"", "127.0.0.1:40001", "ftp://127.0.0.1:40001", "http://", "http://127.0.0.1:40001/shop",
		"http://127.0.0.1:40001/?x=1", "http://127.0.0.1:40001/?", "http://127.0.0.1:40001/#top", "http://user@127.0.0.1:40001", "http://[::1"} {
		err := s.SetPeers([]string{"http://127.0.0.1:40002", o})
		if err == nil || !strings.HasPrefix(err.Error(), "demosite: peer ") {
			t.Errorf("SetPeers(%q) = %v, want a demosite: peer error", o, err)
		}
	}
	home, _ := renderPage(t, s, "/")
	if got := peerSection(home); !strings.Contains(got, "127.0.0.1:40001/") || strings.Contains(got, "40002") {
		t.Errorf("a failed SetPeers changed the peers: %q", got)
	}
}

// TestPeersRing serves three sites on loopback ports linked in a ring (A -> B -> C ->
// A) and crawls from A's home page alone with the spider of A's SpiderYAML: its link
// rules and allowed_domains, over HTTP. The crawl must reach every page of all three
// sites, and each site must have counted exactly its own ground truth, once per URL.
func TestPeersRing(t *testing.T) {
	const n = 3
	sites := make([]*Site, n)
	srvs := make([]*httptest.Server, n)
	for i := range sites {
		sites[i] = New(60 + 10*i)
		srvs[i] = httptest.NewServer(sites[i]) // 127.0.0.1
		defer srvs[i].Close()
	}
	for i, s := range sites {
		if err := s.SetPeers([]string{srvs[(i+1)%n].URL}); err != nil {
			t.Fatal(err)
		}
	}

	home := sitekit.Get(t, srvs[0].URL+"/", http.StatusOK)
	if want := `<a class="peer" href="` + srvs[1].URL + `/">`; !strings.Contains(home, want) {
		t.Errorf("A's home page lacks %s", want)
	}
	if strings.Contains(home, srvs[2].URL) {
		t.Errorf("A's home page links C, which is not its peer")
	}
	sites[0].Reset()

	reached := crawl(t, sites[0].SpiderYAML("ring", srvs[0].URL+"/"), 2000)
	for i, srv := range srvs {
		if !reached[srv.URL+"/"] {
			t.Errorf("the crawl from A did not reach site %d's home page %s/", i, srv.URL)
		}
		// robots.txt is not fetched here, so /private/ is crawled too.
		want := map[string]int{}
		for _, u := range sites[i].Reachable(false) {
			want[u] = 1
		}
		if got := sites[i].Requests(); !maps.Equal(got, want) {
			t.Errorf("site %d: requests differ from its ground truth (-want +got)\n-%v\n+%v", i, want, got)
		}
	}
}

// crawl runs the spider of the YAML spec breadth-first from its start URLs, fetching
// each request once (deduplicated by fingerprint) and keeping to its scope, and
// returns the URLs fetched. It fails t after limit fetches.
func crawl(t *testing.T, spec string, limit int) map[string]bool {
	t.Helper()
	sp, _, err := spiders.Parse("ring.yaml", []byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	scope, err := sp.Scope()
	if err != nil {
		t.Fatal(err)
	}
	parse, err := sp.Callback(spiders.DefaultCallback)
	if err != nil {
		t.Fatal(err)
	}
	queue, err := sp.StartRequests()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[[spiders.FingerprintSize]byte]bool{}
	enqueue := func(rs []*spiders.Request) {
		for _, r := range rs {
			fp, err := r.Fingerprint()
			if err != nil {
				t.Fatal(err)
			}
			if ok, _ := scope.Allows(r); ok && !seen[fp] {
				seen[fp] = true
				queue = append(queue, r)
			}
		}
	}
	start := queue
	queue = nil
	enqueue(start)
	client := &http.Client{Timeout: 10 * time.Second}
	fetched := map[string]bool{}
	for len(queue) > 0 {
		if len(fetched) == limit {
			t.Fatalf("crawl: still going after %d fetches", limit)
		}
		req := queue[0]
		queue = queue[1:]
		res, err := client.Get(req.URL)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		fetched[req.URL] = true
		if res.StatusCode != http.StatusOK {
			continue
		}
		var out spiders.Output
		if err := parse(t.Context(), &spiders.Response{Request: req, URL: req.URL, Status: res.StatusCode, Headers: res.Header, Body: body}, &out); err != nil {
			t.Fatalf("parse %s: %v", req.URL, err)
		}
		enqueue(out.Requests)
	}
	return fetched
}

func TestSetPeersWhileServing(t *testing.T) {
	s := New(50)
	srv := httptest.NewServer(s)
	defer srv.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		sitekit.GetConcurrently(t, srv.URL, []string{"/"}, 4, 20)
	}()
	for i := 0; ; i++ {
		select {
		case <-done:
			if got := s.Requests()["/"]; got != 4*20 {
				t.Errorf("Requests()[/] = %d, want %d", got, 4*20)
			}
			return
		default:
		}
		if err := s.SetPeers([]string{fmt.Sprintf("http://127.0.0.1:%d", 40000+i%100)}); err != nil {
			t.Fatal(err)
		}
	}
}
