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

	"go.uber.org/zap/zaptest"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// recSite serves an index at / linking to /p/0 ... /p/n-1 (and extra links), a robots.txt,
// and records when each request arrived and how many were in flight.
type recSite struct {
	n       int
	delay   time.Duration
	robots  string
	extra   []string
	mu      sync.Mutex
	arrived []hit
	flight  streamstest.Flight
}

type hit struct {
	path string
	at   time.Time
}

func (s *recSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.arrived = append(s.arrived, hit{r.URL.RequestURI(), time.Now()})
	s.mu.Unlock()
	s.flight.Wrap(http.HandlerFunc(s.answer)).ServeHTTP(w, r)
}

// answer answers r (ServeHTTP counts it in flight).
func (s *recSite) answer(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/robots.txt" {
		if s.robots == "" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(s.robots))
		return
	}
	time.Sleep(s.delay)
	w.Header().Set("Content-Type", "text/html")
	var b strings.Builder
	fmt.Fprintf(&b, "<html><body><h1>%s</h1>", r.URL.Path)
	if r.URL.Path == "/" {
		for i := 0; i < s.n; i++ {
			fmt.Fprintf(&b, `<a href="/p/%d">p</a>`, i)
		}
		for _, e := range s.extra {
			fmt.Fprintf(&b, `<a href="%s">x</a>`, e)
		}
	}
	b.WriteString("</body></html>")
	_, _ = w.Write([]byte(b.String()))
}

func (s *recSite) hits() []hit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]hit(nil), s.arrived...)
}

func (s *recSite) count(prefix string) int {
	n := 0
	for _, h := range s.hits() {
		if strings.HasPrefix(h.path, prefix) {
			n++
		}
	}
	return n
}

// runStages runs the given stages with their own consumer name until done.
func runStages(ctx context.Context, t *testing.T, rdb *streamstest.Server, sp *spiders.Spider, consumer string, sink *memSink, stages ...string) error {
	cfg := handlers.RunConfig{
		Client: rdb.Client(), Spider: sp, UntilDone: true, Options: handlers.Options{Sink: sink, Consumer: consumer, Stages: stages,
			RetryBase: 20 * time.Millisecond, PollInterval: 50 * time.Millisecond,
			Subscriber: streams.SubscriberConfig{BlockTime: testBlockTime, RetryBackoff: 20 * time.Millisecond, MaxDeliveries: 3, ShutdownTimeout: 5 * time.Second},
			Logger:     zaptest.NewLogger(t),
		}}
	if sink == nil {
		cfg.Sink = newMemSink()
	}
	return handlers.Run(ctx, cfg)
}

// runCluster seeds sp and runs fetchers fetch processes plus one parse and one store
// process (in-process runners sharing only Redis) until the crawl is done.
func runCluster(t *testing.T, srv *streamstest.Server, sp *spiders.Spider, fetchers int, sink *memSink, during func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if _, err := handlers.Seed(ctx, srv.Client(), sp, nil); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, fetchers+2)
	start := func(name string, sink *memSink, stages ...string) {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- runStages(ctx, t, srv, sp, name, sink, stages...) }()
	}
	for i := 0; i < fetchers; i++ {
		start(fmt.Sprintf("fetch-%d", i), nil, streams.StageFetch)
	}
	start("parse", nil, streams.StageParse)
	start("store", sink, streams.StageStore)
	if during != nil {
		during()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func politeSpider(name string, bases ...string) *spiders.Spider {
	sp := titleSpider(name, bases[0])
	sp.StartURLs = nil
	for _, b := range bases {
		sp.StartURLs = append(sp.StartURLs, b+"/")
	}
	sp.AllowedDomains = nil
	return sp
}

func TestPolitenessIsSharedByAllFetchers(t *testing.T) {
	srv := streamstest.Start(t)
	slow := &recSite{n: 12}
	fast := &recSite{n: 60}
	slowBase := serve(t, slow)                                               // 127.0.0.1:port
	fastBase := strings.Replace(serve(t, fast), "127.0.0.1", "localhost", 1) // another host
	sp := politeSpider("polite", slowBase, fastBase)
	sp.Settings.Limits = []spiders.LimitRule{{Domain: "127.0.0.1", Concurrency: 2, Delay: 200 * time.Millisecond}}
	sp.Settings.Concurrency = 16
	runCluster(t, srv, sp, 2, newMemSink(), nil)

	hits := slow.hits()
	if len(hits) != 13+1 { // index, 12 pages, robots.txt
		t.Fatalf("slow host got %d requests, want 14", len(hits))
	}
	if slow.flight.Max() > 2 {
		t.Errorf("slow host saw %d requests in flight at once; the limit is 2", slow.flight.Max())
	}
	// Tolerance: the gap is enforced on the Redis clock when a fetch is granted; the
	// request reaches the server a little later, by a few ms on an idle machine and by
	// up to tens of ms when the race detector and other test packages load both cores, so
	// a gap may look up to 50 ms short at the server.
	const tolerance = 50 * time.Millisecond
	var pages []time.Time
	for _, h := range hits {
		if h.path != "/robots.txt" {
			pages = append(pages, h.at)
		}
	}
	sort.Slice(pages, func(i, j int) bool { return pages[i].Before(pages[j]) })
	minGap := time.Hour
	for i := 1; i < len(pages); i++ {
		minGap = min(minGap, pages[i].Sub(pages[i-1]))
	}
	if minGap < 200*time.Millisecond-tolerance {
		t.Errorf("two requests to the slow host %s apart; want at least 200ms (-%s tolerance)", minGap, tolerance)
	}
	t.Logf("slow host: %d requests, max %d in flight, smallest gap %s", len(pages), slow.flight.Max(), minGap)
	// The fast host was crawled at full speed meanwhile: done long before the slow one.
	fastHits := fast.hits()
	if len(fastHits) != 62 {
		t.Fatalf("fast host got %d requests, want 62", len(fastHits))
	}
	fastEnd := fastHits[len(fastHits)-1].at
	if !fastEnd.Before(pages[len(pages)/2]) {
		t.Errorf("fast host finished at %s, after half of the slow host's requests (%s): it was held back",
			fastEnd.Format(time.StampMilli), pages[len(pages)/2].Format(time.StampMilli))
	}
}

func TestRobotsFetchedOnceAndObeyedAcrossFourFetchers(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	site := &recSite{n: 15, extra: []string{"/private/a", "/private/b"},
		robots: "User-agent: *\nDisallow: /private/\nCrawl-delay: 0.1\n"}
	base := serve(t, site)
	sp := politeSpider("robots", base)
	runCluster(t, srv, sp, 4, newMemSink(), nil)
	if n := site.count("/robots.txt"); n != 1 {
		t.Errorf("robots.txt fetched %d times by 4 fetchers; want once", n)
	}
	if n := site.count("/private/"); n != 0 {
		t.Errorf("disallowed paths requested %d times; want never", n)
	}
	if n := site.count("/p/"); n != 15 {
		t.Errorf("allowed pages fetched %d times, want 15", n)
	}
	var at []time.Time
	for _, h := range site.hits() {
		if h.path != "/robots.txt" {
			at = append(at, h.at)
		}
	}
	sort.Slice(at, func(i, j int) bool { return at[i].Before(at[j]) })
	for i := 1; i < len(at); i++ {
		// Tolerance as in TestPolitenessIsSharedByAllFetchers.
		if gap := at[i].Sub(at[i-1]); gap < 100*time.Millisecond-50*time.Millisecond {
			t.Errorf("requests %s apart; robots.txt Crawl-delay is 100ms (50ms tolerance)", gap)
		}
	}
	st, err := inspect.ReadStatus(context.Background(), srv.Client(), streams.NewLayout("robots", 1))
	if err != nil {
		t.Fatal(err)
	}
	if st.Stats["robots_disallowed"] != 2 {
		t.Errorf("robots_disallowed = %d, want 2", st.Stats["robots_disallowed"])
	}
}

func TestPrivateAddressesAreDroppedUnlessAllowed(t *testing.T) {
	t.Parallel()
	for _, allow := range []bool{false, true} {
		t.Run(fmt.Sprintf("allow_private_networks=%v", allow), func(t *testing.T) {
			srv := streamstest.Start(t)
			site := &recSite{n: 3}
			// localhost resolves to 127.0.0.1: only the dial-time check can catch it.
			base := strings.Replace(serve(t, site), "127.0.0.1", "localhost", 1)
			sp := politeSpider("private", base)
			sp.Settings.AllowPrivateNetworks = allow
			sp.Settings.AllowNetworks = nil // this test is about the all-or-nothing switch
			off := false
			sp.Settings.ObeyRobots = &off
			runCluster(t, srv, sp, 1, newMemSink(), nil)
			st, err := inspect.ReadStatus(context.Background(), srv.Client(), streams.NewLayout("private", 1))
			if err != nil {
				t.Fatal(err)
			}
			got := len(site.hits())
			if allow && (got != 4 || st.Stats["dropped_private_address"] != 0) {
				t.Errorf("allowed: site got %d requests (want 4), dropped %d", got, st.Stats["dropped_private_address"])
			}
			if !allow && (got != 0 || st.Stats["dropped_private_address"] != 1) {
				t.Errorf("default: site got %d requests (want 0), dropped_private_address = %d (want 1)", got, st.Stats["dropped_private_address"])
			}
		})
	}
}

func TestRuntimeJSONSeedIsFetchedWithinASecondWithItsMeta(t *testing.T) {
	srv := streamstest.Start(t)
	site := &recSite{n: 40, delay: 50 * time.Millisecond}
	base := serve(t, site)
	sp := politeSpider("seeds", base)
	sp.Settings.Concurrency = 2
	sink := newMemSink()
	var pushed time.Time
	runCluster(t, srv, sp, 1, sink, func() {
		time.Sleep(500 * time.Millisecond) // the crawl is running
		pushed = time.Now()
		seed := fmt.Sprintf(`{"url": "%s/landing?x=1", "meta": {"campaign": "spring"}, "priority": 10}`, base)
		if err := srv.Client().LPush(context.Background(), streams.NewKeys("seeds").Seeds, seed).Err(); err != nil {
			t.Error(err)
		}
	})
	var fetched time.Time
	for _, h := range site.hits() {
		if h.path == "/landing?x=1" {
			fetched = h.at
		}
	}
	if fetched.IsZero() {
		t.Fatal("the runtime seed was never fetched")
	}
	if lag := fetched.Sub(pushed); lag > time.Second {
		t.Errorf("runtime seed fetched %s after the push; want within 1s", lag)
	}
	item, ok := sink.item(fmt.Sprintf(`["page","%s/landing?x=1"]`, base))
	if !ok || item.Meta["campaign"] != "spring" {
		t.Fatalf("item of the seed = %+v (found %v); want meta campaign=spring", item, ok)
	}
	// Priority 10: fetched before the backlog of /p/ pages still waiting at the push.
	after := 0
	for _, h := range site.hits() {
		if strings.HasPrefix(h.path, "/p/") && h.at.After(fetched) {
			after++
		}
	}
	if after == 0 {
		t.Error("no /p/ page was fetched after the seed: the test did not catch a backlog")
	}
}

// TestServerSeesPriorityOrder: requests seeded with priorities reach the server in
// priority order (one fetch slot, a dispatch window of one).
func TestServerSeesPriorityOrder(t *testing.T) {
	srv := streamstest.Start(t)
	site := &recSite{n: 0}
	base := serve(t, site)
	sp := politeSpider("prio", base)
	sp.StartURLs = []string{base + "/"}
	sp.Settings.Concurrency, sp.Settings.FrontierWindow = 1, 1
	off := false
	sp.Settings.ObeyRobots = &off
	ctx := context.Background()
	// Queue everything before any fetcher runs: the frontier holds them in order.
	prios := map[string]int{"/p/low": -5, "/p/mid": 0, "/p/high": 10, "/p/top": 50, "/p/lower": -10}
	var cands []frontier.Candidate
	for path, p := range prios {
		c, err := handlers.CandidateFor(&spiders.Spider{}, &spiders.Request{URL: base + path, Priority: p})
		if err != nil {
			t.Fatal(err)
		}
		cands = append(cands, c)
	}
	f, err := handlers.NewFrontier(ctx, srv.Client(), sp)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Emit(ctx, 0, cands, nil); err != nil {
		t.Fatal(err)
	}
	f.Close(context.Background())
	runCluster(t, srv, sp, 1, newMemSink(), nil)
	var got []string
	for _, h := range site.hits() {
		if strings.HasPrefix(h.path, "/p/") {
			got = append(got, h.path)
		}
	}
	want := "[/p/top /p/high /p/mid /p/low /p/lower]"
	if fmt.Sprint(got) != want {
		t.Fatalf("order at the server (-want +got):\n-%s\n+%v", want, got)
	}
}

// TestRuntimeSeedsFromASet: seeds whose order does not matter can be SADDed; the crawl is
// not done while any wait there.
func TestRuntimeSeedsFromASet(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	site := &recSite{n: 0}
	base := serve(t, site)
	sp := politeSpider("setseeds", base)
	if err := srv.Client().SAdd(context.Background(), streams.NewKeys("setseeds").Seeds, base+"/s/1", base+"/s/2", base+"/s/3").Err(); err != nil {
		t.Fatal(err)
	}
	runCluster(t, srv, sp, 1, newMemSink(), nil)
	for _, p := range []string{"/s/1", "/s/2", "/s/3"} {
		if n := site.count(p); n != 1 {
			t.Errorf("%s fetched %d times, want 1", p, n)
		}
	}
}
