package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestRedirectHopsTakeTheTargetHostsTurn: ten pages of one host redirect to ten pages
// of another whose limit is one request at a time, 300ms apart. Every hop waits for
// the target host's turn: no two of its requests start closer than its delay, and all
// ten are fetched. (Hops followed inside the first host's fetches hit it ten at once.)
func TestRedirectHopsTakeTheTargetHostsTurn(t *testing.T) {
	srv := streamstest.Start(t)
	var mu sync.Mutex
	var starts []time.Time
	inFlight, most := 0, 0
	target := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		starts = append(starts, time.Now())
		inFlight++
		most = max(most, inFlight)
		mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		page(w, r.URL.Path)
		mu.Lock()
		inFlight--
		mu.Unlock()
	}))
	targetBase := strings.Replace(target, "127.0.0.1", "localhost", 1)
	source := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/r/") {
			http.Redirect(w, r, targetBase+"/p/"+strings.TrimPrefix(r.URL.Path, "/r/"), http.StatusFound)
			return
		}
		http.NotFound(w, r)
	}))
	sp := titleSpider("hopturn", source)
	sp.StartURLs = nil
	for i := range 10 {
		sp.StartURLs = append(sp.StartURLs, fmt.Sprintf("%s/r/%d", source, i))
	}
	sp.AllowedDomains = []string{"127.0.0.1", "localhost"}
	sp.Settings.Limits = []spiders.LimitRule{{Domain: "localhost", Concurrency: 1, Delay: 300 * time.Millisecond}}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := runCrawl(ctx, t, srv.Client(), sp, newMemSink(), nil); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(starts) != 10 || most != 1 {
		t.Fatalf("target asked %d times, at most %d at once; want 10, 1", len(starts), most)
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i].Before(starts[j]) })
	for i := 1; i < len(starts); i++ {
		if gap := starts[i].Sub(starts[i-1]); gap < 280*time.Millisecond {
			t.Errorf("requests %d and %d to the target started %v apart, want its delay (300ms)", i-1, i, gap)
		}
	}
}

// TestRedirectTargetsAreDeduplicated: /a redirects to /b, which the home page also
// links: /b is fetched once. A page that redirects to itself to set a cookie is fetched
// again (that hop skips the duplicate filter) and its page stored; a page that
// redirects to itself forever ends as a dead letter after max_redirects hops; a chain
// longer than max_redirects stops there; the page a chain ends at knows the chain.
func TestRedirectTargetsAreDeduplicated(t *testing.T) {
	srv := streamstest.Start(t)
	site := counted(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; {
		case p == "/":
			page(w, "home", "/a", "/b", "/cookie", "/loop", "/c/0")
		case p == "/a":
			http.Redirect(w, r, "/b", http.StatusMovedPermanently)
		case p == "/cookie":
			if _, err := r.Cookie("session"); err != nil {
				http.SetCookie(w, &http.Cookie{Name: "session", Value: "1", Path: "/"})
				http.Redirect(w, r, "/cookie", http.StatusFound)
				return
			}
			page(w, "cookie page")
		case p == "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		case strings.HasPrefix(p, "/c/"):
			var i int
			fmt.Sscanf(p, "/c/%d", &i)
			http.Redirect(w, r, fmt.Sprintf("/c/%d", i+1), http.StatusFound)
		default:
			page(w, p)
		}
	}))
	base := serve(t, site)
	sp := titleSpider("hopdedup", base)
	sp.StartURLs = []string{base + "/"}
	sp.Settings.ObeyRobots = new(bool)
	three := 3
	sp.Settings.MaxRedirects = &three
	var chainMu sync.Mutex
	chains := map[string][]string{}
	parse := sp.Callbacks["parse"]
	sp.Handle("parse", func(ctx context.Context, res *spiders.Response, out *spiders.Output) error {
		chainMu.Lock()
		chains[res.URL] = res.Request.RedirectURLs
		chainMu.Unlock()
		return parse(ctx, res, out)
	})
	sink := newMemSink()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := runCrawl(ctx, t, srv.Client(), sp, sink, nil); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]int{"/a": 1, "/b": 1, "/cookie": 2, "/loop": 4, "/c/0": 1, "/c/3": 1, "/c/4": 0} {
		if n := site.count(p); n != want {
			t.Errorf("%s fetched %d times, want %d", p, n, want)
		}
	}
	if _, ok := sink.item(fmt.Sprintf(`["page","%s/cookie"]`, base)); !ok {
		t.Errorf("the page behind the cookie redirect was not stored")
	}
	chainMu.Lock()
	if got := fmt.Sprint(chains[base+"/b"]); got != "[]" && got != fmt.Sprintf("[%s/a]", base) {
		t.Errorf("/b's chain %s", got)
	}
	if got, want := fmt.Sprint(chains[base+"/cookie"]), fmt.Sprintf("[%s/cookie]", base); got != want {
		t.Errorf("the cookie page's redirect chain is %s, want %s", got, want)
	}
	chainMu.Unlock()
	st, err := inspect.ReadStatus(ctx, srv.Client(), streams.NewLayout("hopdedup", 1))
	if err != nil {
		t.Fatal(err)
	}
	if st.DeadLetters != 2 || st.Stats["redirects_exhausted"] != 2 {
		t.Errorf("%d dead letters, redirects_exhausted %d; want 2 (the loop, the long chain)", st.DeadLetters, st.Stats["redirects_exhausted"])
	}
}
