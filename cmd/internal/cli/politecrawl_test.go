package cli

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders/demosite"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// The network fault tests (zombie_test.go, partition_test.go, network_test.go) crawl a
// demo shop politely: at most politeSlots requests in flight to its one host, each
// answered after a latency so that they overlap, and the server counts how many it
// answers at once. What a fault does to that limit is seen where it matters, at the
// site.

// politeSlots is the per_host_concurrency of the polite crawls.
const politeSlots = 2

// fastReclaim are the flags that let a stage take a silent consumer's entries over
// quickly: a frozen or cut-off process is a zombie after 4 s. Not less: a live process
// renews what it holds every third of --min-idle, and a machine loaded to a load average
// of 35 delayed that past 2/3 of 2 s (a live fetcher lost a request in flight).
var fastReclaim = []string{"--min-idle", "4s", "--claim-interval", "200ms"}

// siteWatch counts the requests a site answers at once, whichever process sent them (a
// host's concurrency as the host sees it: streamstest.Flight), and how often each page
// was asked for.
type siteWatch struct {
	flight streamstest.Flight
	mu     sync.Mutex
	asked  map[string]int // path?query -> requests
}

// wrap returns h watched.
func (f *siteWatch) wrap(h http.Handler) http.Handler {
	counted := f.flight.Wrap(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		if f.asked == nil {
			f.asked = map[string]int{}
		}
		f.asked[r.URL.RequestURI()]++
		f.mu.Unlock()
		counted.ServeHTTP(w, r)
	})
}

// Max returns the most requests answered at once so far.
func (f *siteWatch) Max() int { return f.flight.Max() }

// requests returns how often pathQuery was asked for so far.
func (f *siteWatch) requests(pathQuery string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.asked[pathQuery]
}

// delayed answers through h after a latency the test may change while the crawl runs.
// A request whose client gives up meanwhile gets no answer.
type delayed struct {
	h http.Handler
	d atomic.Int64 // nanoseconds
}

func (s *delayed) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if d := time.Duration(s.d.Load()); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		}
	}
	s.h.ServeHTTP(w, r)
}

// set changes the latency of the answers from now on.
func (s *delayed) set(d time.Duration) { s.d.Store(int64(d)) }

// politeCrawl is a crawl of a demo shop by separate stage processes with
// per_host_concurrency politeSlots, each answer delayed, the answers in flight counted
// at the server. Each store process writes its own items file.
type politeCrawl struct {
	*cluster
	site   *demosite.Site
	slow   *delayed
	flight siteWatch
	outs   []string // the items files of the store processes
}

// newPoliteCrawl serves a demo shop of pages pages answering after latency, writes its
// spider (per_host_concurrency politeSlots) and starts a redis-server.
func newPoliteCrawl(t *testing.T, pages int, latency time.Duration) *politeCrawl {
	t.Helper()
	return newSiteCrawl(t, pages, latency, nil, nil)
}

// newSiteCrawl is newPoliteCrawl with the site's answers through wrap (nil: as they are;
// inside the count of requests in flight) and the site crawled at the address front
// returns for the one it is served at (nil: that one), a fault proxy's.
func newSiteCrawl(t *testing.T, pages int, latency time.Duration, wrap func(http.Handler) http.Handler,
	front func(addr string) string) *politeCrawl {
	t.Helper()
	site := demosite.New(pages)
	c := &politeCrawl{site: site, slow: &delayed{h: site}}
	c.slow.set(latency)
	c.cluster = &cluster{t: t, name: "shop", starts: map[string]int{}}
	c.srv = streamstest.Start(t)
	c.rdb = c.srv.Client()
	var h http.Handler = c.slow
	if wrap != nil {
		h = wrap(h)
	}
	c.base = serveSite(t, c.flight.wrap(h))
	if front != nil {
		c.base = "http://" + front(strings.TrimSuffix(strings.TrimPrefix(c.base, "http://"), "/")) + "/"
	}
	c.spider = writeFile(t, c.name+".yaml", politeSpider(t, site, c.name, c.base))
	return c
}

// politeSpider is the end-to-end spider of site at base with per_host_concurrency
// politeSlots.
func politeSpider(t testing.TB, site *demosite.Site, name, base string) string {
	t.Helper()
	y := spiderYAML(t, site, name, base)
	out := strings.Replace(y, "per_host_concurrency: 32 ", fmt.Sprintf("per_host_concurrency: %d ", politeSlots), 1)
	if out == y {
		t.Fatalf("spider has no per_host_concurrency: 32 to lower:\n%s", y)
	}
	return out
}

// stageVia starts a stage process (--until-done, the end-to-end retries) with its Redis
// at redisURL (the test's redis-server, or a fault proxy in front of it) and extra
// flags; a store process writes an items file of its own.
func (c *politeCrawl) stageVia(stage, consumer, redisURL string, extra ...string) *proc {
	args := []string{stage, "--until-done", "--redis", redisURL, "--spider", c.spider,
		"--consumer", consumer, "--log-level", "info"}
	args = append(args, fastRetries...)
	if stage == streams.StageStore {
		out := filepath.Join(c.t.TempDir(), consumer+".jsonl")
		c.outs = append(c.outs, out)
		args = append(args, "--out", out)
	}
	return startProc(c.t, consumer, nil, append(args, extra...)...)
}

// startStages starts fetchers, parsers and storers processes of each stage on the
// test's redis-server, with extra flags, by consumer name.
func (c *politeCrawl) startStages(fetchers, parsers, storers int, extra ...string) map[string]*proc {
	procs := map[string]*proc{}
	for _, st := range []struct {
		stage string
		n     int
	}{{streams.StageFetch, fetchers}, {streams.StageParse, parsers}, {streams.StageStore, storers}} {
		for i := 1; i <= st.n; i++ {
			name := fmt.Sprintf("%s-%d", st.stage, i)
			procs[name] = c.stageVia(st.stage, name, c.srv.URL(), extra...)
		}
	}
	return procs
}

// procList returns the processes of procs.
func procList(procs map[string]*proc) []*proc {
	out := make([]*proc, 0, len(procs))
	for _, p := range procs {
		out = append(out, p)
	}
	return out
}

// waitRequests waits until the site has answered n requests (the crawl is under way),
// failing the test after timeout or if the crawl ends first.
func (c *politeCrawl) waitRequests(n int64, timeout time.Duration, procs ...*proc) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for c.site.TotalRequests() < n {
		for _, p := range procs {
			if p.Exited() {
				c.t.Fatalf("%s exited (code %d) before the site served %d requests", p.name, p.code, n)
			}
		}
		if time.Now().After(deadline) {
			logStatus(c.t, c.rdb, c.name)
			c.t.Fatalf("the site served %d requests in %s, want %d", c.site.TotalRequests(), timeout, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// freezeHolding stops p (SIGSTOP) at a moment it holds entries of stage's group, and
// returns how many. An entry it acks as it is stopped may leave it holding none: then
// it thaws it and tries again, up to timeout.
func (c *politeCrawl) freezeHolding(p *proc, stage string, timeout time.Duration) int64 {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if consumerPending(c.t, c.rdb, c.name, stage)[p.name] > 0 {
			if err := p.Signal(syscall.SIGSTOP); err != nil {
				c.t.Fatalf("SIGSTOP %s: %v", p.name, err)
			}
			time.Sleep(100 * time.Millisecond) // what it sent before the stop reaches Redis
			if held := consumerPending(c.t, c.rdb, c.name, stage)[p.name]; held > 0 {
				c.t.Logf("%s stopped holding %d entries", p.name, held)
				return held
			}
			if err := p.Signal(syscall.SIGCONT); err != nil {
				c.t.Fatalf("SIGCONT %s: %v", p.name, err)
			}
		}
		if p.Exited() || time.Now().After(deadline) {
			c.t.Fatalf("%s held no entry of %s when stopped within %s (exited: %v)", p.name, stage, timeout, p.Exited())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// itemCopies are the lines of the store processes' items files, told apart.
type itemCopies struct {
	first []map[string]any // the first line of each item key
	// redone are the lines repeating an item key and page: work a stage did twice
	// (a zombie's, or its taker's).
	redone int
	// twins are the lines repeating an item key from another page (a product page and
	// its tracking-parameter variant parsed at the same moment: see
	// checkCleanItemStats).
	twins int
}

// readItemCopies reads every store process's items file.
func (c *politeCrawl) readItemCopies() itemCopies {
	c.t.Helper()
	var ic itemCopies
	pages := map[string]map[string]bool{} // item key -> pages it came from
	for _, out := range c.outs {
		for _, l := range readItems(c.t, out) {
			key, page := str(l["url"]), str(l["_url"])
			switch {
			case pages[key] == nil:
				pages[key] = map[string]bool{page: true}
				ic.first = append(ic.first, l)
			case pages[key][page]:
				ic.redone++
			default:
				pages[key][page] = true
				ic.twins++
			}
		}
	}
	return ic
}

// checkPoliteItems checks that the items stored are want (counting each item key
// once), that at most 1% of them were stored again by work done twice, and twins at
// most 5% as in a clean crawl.
func (c *politeCrawl) checkPoliteItems(want []map[string]string) itemCopies {
	c.t.Helper()
	ic := c.readItemCopies()
	checkItems(c.t, ic.first, want, "product", "url")
	n := len(want)
	if ic.redone*100 > n {
		c.t.Errorf("%d items stored again from the same page (work done twice), want at most 1%% of %d items", ic.redone, n)
	}
	if ic.twins*20 > n {
		c.t.Errorf("%d twin items stored (a product page and its variant), want at most 5%% of %d items", ic.twins, n)
	}
	return ic
}

// checkServerErrorsDead checks that the dead letters are the site's 500 pages and
// nothing else (a page dead-lettered for another reason would be a page lost); how
// often each died is not looked at (a retry done twice may die twice).
func (c *politeCrawl) checkServerErrorsDead() {
	c.t.Helper()
	dead := deadLetterPaths(c.t, c.rdb, c.name, c.base)
	for k := range dead {
		dead[k] = 1
	}
	want := prefixed("stage=fetch ", setOf(c.site.ReachableKind(false, demosite.ServerError)))
	if d := diffCounts(want, dead, 20); d != "" {
		c.t.Errorf("dead letters (-want +got):\n%s", d)
	}
}

// checkEveryPageRequested checks that the site answered every reachable URL at least as
// often as a clean crawl asks for it, and nothing else; it returns the requests beyond.
func (c *politeCrawl) checkEveryPageRequested() int {
	c.t.Helper()
	want := wantRequests(c.site.Reachable(false), c.site.ReachableKind(false, demosite.ServerError))
	got := c.site.Requests()
	extra := 0
	for u, n := range got {
		if want[u] == 0 {
			c.t.Errorf("site got %d requests for %s, which is not reachable", n, u)
		}
		extra += n - want[u]
	}
	for u, n := range want {
		if got[u] < n {
			c.t.Errorf("%s requested %d times, want at least %d", u, got[u], n)
		}
	}
	return extra
}

// checkComplete checks that the crawl lost nothing: every reachable page requested,
// every item stored (at most 1% twice), every group drained, the crawl done, only the
// 500 pages dead. It logs what it saw, with the most requests in flight at the site.
func (c *politeCrawl) checkComplete(what string) {
	c.t.Helper()
	extra := c.checkEveryPageRequested()
	ic := c.checkPoliteItems(c.site.ExpectedItems(c.base))
	c.t.Logf("%s: most requests in flight at the site %d (limit %d); %d requests beyond a clean crawl's; "+
		"%d products, %d items stored twice from the same page, %d twins", what, c.flight.Max(), politeSlots, extra,
		len(c.site.Products()), ic.redone, ic.twins)
	checkFinished(c.t, c.rdb, c.name)
	c.checkServerErrorsDead()
}

// checkInFlight checks that the site never answered more than politeSlots requests at
// once.
func (c *politeCrawl) checkInFlight() {
	c.t.Helper()
	if m := c.flight.Max(); m > politeSlots {
		c.t.Errorf("the site answered %d requests at once, want at most per_host_concurrency %d", m, politeSlots)
	}
}
