package handlers_test

import (
	"fmt"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/handlers/fetch/browser/browsertest"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// hits records when a server was asked for each path.
type hits struct {
	mu sync.Mutex
	at map[string][]time.Time
}

func newHits() *hits { return &hits{at: map[string][]time.Time{}} }

func (h *hits) add(path string) {
	h.mu.Lock()
	h.at[path] = append(h.at[path], time.Now())
	h.mu.Unlock()
}

func (h *hits) of(path string) []time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := append([]time.Time(nil), h.at[path]...)
	sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
	return out
}

// paceCrawl crawls spider YAML y (one browser of 2 tabs) and returns the crawl's stats
// and how many items were stored.
func paceCrawl(t *testing.T, rdb redis.UniversalClient, name, y string) (map[string]int64, int) {
	t.Helper()
	sp, _, err := spiders.Parse(name+".yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	sink, out := renderSpider(t, rdb, sp, 2)
	sink.mu.Lock()
	defer sink.mu.Unlock()
	return out, len(sink.last)
}

// checkSpacing fails when two of starts are closer than gap (less 50 ms of clock
// slack).
func checkSpacing(t *testing.T, what string, starts []time.Time, gap time.Duration) {
	t.Helper()
	for i := 1; i < len(starts); i++ {
		if d := starts[i].Sub(starts[i-1]); d < gap-50*time.Millisecond {
			t.Errorf("%s: requests %d and %d came %s apart, want at least %s", what, i, i+1, d, gap)
		}
	}
}

// TestRenderedNavigationsArePolite renders a page whose script navigates it (to a new
// URL of its own host) 10 ms after each load, for 25 s, with per_host_delay 2s and
// max_redirects 10: the host sees at most 11 document loads (the first and 10
// navigations), each at least 2 s after the one before; the navigations past the
// limit are refused and the page keeps what it has (its item is stored). (A script
// that navigates every 10 ms whatever loaded does less: each navigation that waits
// for its turn is replaced by the next before it leaves.)
func TestRenderedNavigationsArePolite(t *testing.T) {
	browsertest.Chromium(t)
	h := newHits()
	base := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.add(r.URL.Path)
		if r.URL.Path != "/loop" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><html><body><h1>loop</h1><script>
setTimeout(() => { location.href = "/loop?at=" + Date.now(); }, 10);
</script></body></html>`)
	}))
	srv := streamstest.Start(t)
	stats, items := paceCrawl(t, srv.Client(), "navloop", fmt.Sprintf(`name: navloop
start_urls: [%s/loop]
allowed_domains: [127.0.0.1]
render: true
page:
  wait: {ms: 25000}
items:
  - type: doc
    when: "h1"
    key: [title]
    fields:
      title: "h1"
settings:
  per_host_delay: 2s
  max_redirects: 10
  download_timeout: 60s
  allow_networks: [127.0.0.1/32]
`, base))
	loads := h.of("/loop")
	t.Logf("document loads of /loop: %d over %s; stats: navigations paced %d, over the limit %d, refused %d",
		len(loads), loads[len(loads)-1].Sub(loads[0]), stats["render_navigations_paced"], stats["render_navigations_over_limit"],
		stats["render_navigations_refused"])
	if len(loads) > 11 {
		t.Errorf("%d document loads, want at most 11 (max_redirects 10)", len(loads))
	}
	if len(loads) < 3 {
		t.Errorf("%d document loads: the page's navigations were not followed at all", len(loads))
	}
	checkSpacing(t, "document loads", loads, 2*time.Second)
	if items != 1 || stats["render_navigations_over_limit"] == 0 {
		t.Errorf("%d items stored, %d navigations over the limit; want the page's item, and navigations refused past max_redirects",
			items, stats["render_navigations_over_limit"])
	}
}

// TestRenderedSubrequestsArePolite renders two pages with per_host_delay 1s and
// render_max_requests 40: one whose script sends 2,000 fetch() calls to another host
// (another crawled host: the other port of 127.0.0.1), one whose script sends 2,000 to
// its own host. The other host sees its requests at least 1 s apart; the page's own
// host sees at most 40 of them (the cap); both pages' items are stored.
func TestRenderedSubrequestsArePolite(t *testing.T) {
	browsertest.Chromium(t)
	other := newHits()
	otherBase := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		other.add(r.URL.Path)
		w.Header().Set("Access-Control-Allow-Origin", "*")
		fmt.Fprint(w, "x")
	}))
	own := newHits()
	base := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		own.add(r.URL.Path)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		// Each render asks the server (the caps are a render's, counted by its loads here),
		// not the tab's HTTP cache.
		w.Header().Set("Cache-Control", "no-store")
		switch r.URL.Path {
		case "/flood":
			fmt.Fprintf(w, `<!doctype html><html><body><h1>flood</h1><script>
for (let i = 0; i < 2000; i++) fetch(%q + "/x?" + i).catch(() => {});
</script></body></html>`, otherBase)
		case "/ownflood":
			fmt.Fprint(w, `<!doctype html><html><body><h1>ownflood</h1><script>
for (let i = 0; i < 2000; i++) fetch("/own?" + i).catch(() => {});
</script></body></html>`)
		case "/own":
			fmt.Fprint(w, "x")
		default:
			http.NotFound(w, r)
		}
	}))
	srv := streamstest.Start(t)
	stats, items := paceCrawl(t, srv.Client(), "subflood", fmt.Sprintf(`name: subflood
start_urls: [%s/flood, %s/ownflood]
allowed_domains: [127.0.0.1]
render: true
page:
  wait: {ms: 8000}
items:
  - type: doc
    when: "h1"
    key: [title]
    fields:
      title: "h1"
settings:
  per_host_delay: 1s
  render_max_requests: 40
  download_timeout: 30s
  allow_networks: [127.0.0.1/32]
`, base, base))
	xs, owns := other.of("/x"), own.of("/own")
	t.Logf("the other host saw %d requests; the page's own host %d in %d renders; stats: paced %d, capped %d", len(xs), len(owns),
		len(own.of("/ownflood")), stats["render_subrequests_paced"], stats["render_subrequests_capped"])
	if floods := len(own.of("/flood")); len(xs) == 0 || len(xs) > 31*max(floods, 1) {
		t.Errorf("the other host saw %d requests in %d renders, want 1..31 a render (one a second for the page's at most 30 s)", len(xs), floods)
	}
	checkSpacing(t, "requests to the other host", xs, time.Second)
	// The cap is a render's: a render that failed (a loaded machine: the page deadline,
	// a browser lost) and was retried has another 40.
	renders := len(own.of("/ownflood"))
	if len(owns) == 0 || renders == 0 || len(owns) > 40*renders {
		t.Errorf("the page's own host saw %d of its fetch() calls in %d renders, want 1..40 a render (render_max_requests)", len(owns), renders)
	}
	if stats["render_subrequests_capped"] == 0 || stats["render_subrequests_paced"] == 0 {
		t.Errorf("stats %v: want requests capped and paced", stats)
	}
	if items != 2 {
		t.Errorf("%d items stored, want 2", items)
	}
	if n := len(own.of("/flood")) + len(own.of("/ownflood")); n != 2 {
		t.Errorf("pages loaded %d times, want 2", n)
	}
}
