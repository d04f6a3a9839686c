package handlers_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// stillSite serves pages that never change and writes down, per path, each answer:
// "200" or "304", after "c" when the request asked conditionally (If-None-Match or
// If-Modified-Since). /p/<i> and /other/<i> send an ETag and a Last-Modified and answer
// 304 to a request that has them; /plain/<i> sends neither.
type stillSite struct {
	mu  sync.Mutex
	log map[string][]string
}

func newStillSite() *stillSite { return &stillSite{log: map[string][]string{}} }

func (s *stillSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	inm, ims := r.Header.Get("If-None-Match"), r.Header.Get("If-Modified-Since")
	answer := "200"
	if !strings.HasPrefix(r.URL.Path, "/plain/") {
		etag := fmt.Sprintf(`"still-%s"`, r.URL.Path)
		w.Header().Set("ETag", etag)
		w.Header().Set("Last-Modified", siteEpoch.Format(http.TimeFormat))
		t, err := http.ParseTime(ims)
		if inm == etag || inm == "" && err == nil && !siteEpoch.After(t) {
			answer = "304"
		}
	}
	if inm != "" || ims != "" {
		answer = "c" + answer
	}
	s.mu.Lock()
	s.log[r.URL.Path] = append(s.log[r.URL.Path], answer)
	s.mu.Unlock()
	if strings.HasSuffix(answer, "304") {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	page(w, "still "+r.URL.Path)
}

// answers returns a copy of the log.
func (s *stillSite) answers() map[string][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string][]string, len(s.log))
	for p, a := range s.log {
		out[p] = slices.Clone(a)
	}
	return out
}

// count returns how many answers of the log are a.
func count(log map[string][]string, a string) int {
	n := 0
	for _, as := range log {
		for _, x := range as {
			if x == a {
				n++
			}
		}
	}
	return n
}

// paths returns "/<dir>/0" to "/<dir>/<n-1>".
func paths(dir string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("/%s/%d", dir, i)
	}
	return out
}

// checkAnswers fails the test for every page whose answers are not want's.
func checkAnswers(t *testing.T, want, got map[string][]string) {
	t.Helper()
	for _, p := range slices.Sorted(maps.Keys(want)) {
		if !slices.Equal(want[p], got[p]) {
			t.Errorf("%s answered %v, want %v", p, got[p], want[p])
		}
	}
	for p, as := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("%s answered %v, want no request", p, as)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

// waitUntil polls cond every 20 ms until it holds, or fails the test when ctx ends.
func waitUntil(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// storedValidators returns how many URLs have validators stored in the crawl.
func storedValidators(ctx context.Context, t *testing.T, rdb redis.UniversalClient, crawl string) int64 {
	t.Helper()
	var n int64
	for _, k := range rdb.Keys(ctx, "sc:{"+crawl+"}:validators:*").Val() {
		n += rdb.HLen(ctx, k).Val()
	}
	return n
}

// validatorBytes returns what the crawl's validators take in Redis (MEMORY USAGE).
func validatorBytes(ctx context.Context, t *testing.T, rdb redis.UniversalClient, crawl string) int64 {
	t.Helper()
	var n int64
	for _, k := range rdb.Keys(ctx, "sc:{"+crawl+"}:validators:*").Val() {
		n += rdb.MemoryUsage(ctx, k).Val()
	}
	return n
}

// TestRuleRevisitsOfAContinuousCrawlAreConditional: a continuous crawl under
// settings.revisit.rules alone (no revisit.after) of 32 unchanged pages with validators
// and 8 without, whose scheduled revisits the test makes due twice while it runs. Each
// page with validators answers 200 to its first visit and 304 to both revisits, asked
// with the validators of the first; each page without is fetched whole every time,
// never asked conditionally. No item goes out twice. Validators are kept for the 32
// pages the rules revisit and for no other page of the crawl: 4 pages no rule matches
// keep none although they send them.
func TestRuleRevisitsOfAContinuousCrawlAreConditional(t *testing.T) {
	t.Parallel()
	const n, plain, other, rounds = 32, 8, 4, 2
	rdb := streamstest.Start(t).Client()
	site := newStillSite()
	base := serve(t, site)
	sp := titleSpider("condrules", base)
	sp.StartURLs = nil
	for _, p := range slices.Concat(paths("p", n), paths("plain", plain), paths("other", other)) {
		sp.StartURLs = append(sp.StartURLs, base+p)
	}
	sp.Settings.PerHostConcurrency = -1
	sp.Settings.ObeyRobots = new(bool)
	sp.Settings.Capacity = n // sizes the validators' buckets
	sp.Settings.Revisit.Rules = []spiders.RevisitRule{{Match: `/(p|plain)/`, Min: time.Minute, Max: time.Hour, Start: 10 * time.Minute}}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	layout := streams.NewLayout("condrules", 1)
	k := layout.Parts[0]

	sink := newMemSink()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- runCrawl(runCtx, t, rdb, sp, sink, func(c *handlers.RunConfig) {
			c.Continuous = &inspect.Continuous{On: true} // not done while revisits are scheduled
		})
	}()
	visited := func(times int) func() bool {
		return func() bool {
			log := site.answers()
			for _, p := range slices.Concat(paths("p", n), paths("plain", plain)) {
				if len(log[p]) != times {
					return false
				}
			}
			rv, _ := rdb.HGet(ctx, k.Counts, "revisits").Int()
			return rv == n+plain // each fetch scheduled the next
		}
	}
	waitUntil(ctx, t, "the first visits", visited(1))
	for r := range rounds {
		// The schedule's buckets are made due now; the running fetch process releases
		// them (it looks at least every 2 s).
		for _, b := range rdb.ZRange(ctx, k.Revisits, 0, -1).Val() {
			rdb.ZAdd(ctx, k.Revisits, redis.Z{Score: 0, Member: b})
		}
		waitUntil(ctx, t, fmt.Sprintf("revisit %d", r+1), visited(r+2))
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	log := site.answers()
	want := map[string][]string{}
	for _, p := range paths("p", n) {
		want[p] = []string{"200", "c304", "c304"}
	}
	for _, p := range paths("plain", plain) {
		want[p] = []string{"200", "200", "200"}
	}
	for _, p := range paths("other", other) {
		want[p] = []string{"200"}
	}
	checkAnswers(t, want, log)
	for key, times := range sink.keys() {
		if times != 1 {
			t.Errorf("item %s stored %d times, want once", key, times)
		}
	}
	if got := len(sink.keys()); got != n+plain+other {
		t.Errorf("%d items stored, want %d", got, n+plain+other)
	}
	if got := storedValidators(ctx, t, rdb, "condrules"); got != n {
		t.Errorf("validators of %d URLs stored, want %d (the revisited pages that send them)", got, n)
	}
	stats := rdb.HGetAll(ctx, layout.Global.Stats).Val()
	if stats["not_modified"] != fmt.Sprint(rounds*n) || stats["revisits_unchanged"] != fmt.Sprint(rounds*(n+plain)) {
		t.Errorf("stats not_modified %s, revisits_unchanged %s; want %d and %d", stats["not_modified"], stats["revisits_unchanged"], rounds*n, rounds*(n+plain))
	}
	t.Logf("%d requests, %d conditional, %d answered 304, %d revisits fetched whole (no validators); validators: %d bytes in Redis for %d URLs",
		count(log, "200")+count(log, "c304")+count(log, "c200"), count(log, "c304")+count(log, "c200"), count(log, "c304"),
		rounds*plain, validatorBytes(ctx, t, rdb, "condrules"), n)
}

// TestSeededAgainAfterRevisitAfterIsConditional: a continuous crawl under
// settings.revisit.after alone, its 32 unchanged pages with validators and 8 without
// pushed to its start_urls key three times while its stages run as services. Every URL
// is let through dedup again each time: the pages with validators answer 200, then 304
// twice; the others are fetched whole every time, never asked conditionally. No item
// goes out twice.
func TestSeededAgainAfterRevisitAfterIsConditional(t *testing.T) {
	t.Parallel()
	const n, plain, rounds = 32, 8, 2
	rdb := streamstest.Start(t).Client()
	site := newStillSite()
	base := serve(t, site)
	sp := titleSpider("condafter", base)
	sp.StartURLs = []string{base + "/p/0"}
	sp.Settings.PerHostConcurrency = -1
	sp.Settings.ObeyRobots = new(bool)
	sp.Settings.Capacity = n
	sp.Settings.Revisit.After = time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	layout := streams.NewLayout("condafter", 1)
	all := slices.Concat(paths("p", n), paths("plain", plain))

	sink := newMemSink()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- runCrawl(runCtx, t, rdb, sp, sink, func(c *handlers.RunConfig) {
			c.UntilDone = false // services: they take seeds as they come
			c.Continuous = &inspect.Continuous{On: true}
		})
	}()
	waitUntil(ctx, t, "the start URL", func() bool { return len(site.answers()["/p/0"]) == 1 })
	time.Sleep(2 * time.Millisecond) // past revisit.after
	for r := range rounds + 1 {
		for _, p := range all {
			if err := rdb.LPush(ctx, layout.Global.Seeds, base+p).Err(); err != nil {
				t.Fatal(err)
			}
		}
		waitUntil(ctx, t, fmt.Sprintf("round %d", r+1), func() bool {
			log := site.answers()
			for _, p := range all {
				if len(log[p]) != r+1+boolInt(p == "/p/0") {
					return false
				}
			}
			return true
		})
		time.Sleep(2 * time.Millisecond) // past revisit.after
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	log := site.answers()
	want := map[string][]string{"/p/0": {"200", "c304", "c304", "c304"}}
	for _, p := range paths("p", n)[1:] {
		want[p] = []string{"200", "c304", "c304"}
	}
	for _, p := range paths("plain", plain) {
		want[p] = []string{"200", "200", "200"}
	}
	checkAnswers(t, want, log)
	for key, times := range sink.keys() {
		if times != 1 {
			t.Errorf("item %s stored %d times, want once", key, times)
		}
	}
	if got := len(sink.keys()); got != n+plain {
		t.Errorf("%d items stored, want %d", got, n+plain)
	}
	if got := storedValidators(ctx, t, rdb, "condafter"); got != n {
		t.Errorf("validators of %d URLs stored, want %d", got, n)
	}
	t.Logf("%d requests, %d conditional, %d answered 304", count(log, "200")+count(log, "c304")+count(log, "c200"),
		count(log, "c304")+count(log, "c200"), count(log, "c304"))
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestSeedsPushedAgainWithDontFilterAreConditional: a continuous crawl with no revisit
// settings at all, whose pages are pushed again as dont_filter seeds while its stages
// run as services: the first fetch of each keeps its validators, and each later one asks
// with them (pages with validators answer 304, those without are fetched whole). The
// start URL, fetched once as in a one-off crawl, keeps none.
func TestSeedsPushedAgainWithDontFilterAreConditional(t *testing.T) {
	t.Parallel()
	const n, plain, rounds = 8, 4, 2
	rdb := streamstest.Start(t).Client()
	site := newStillSite()
	base := serve(t, site)
	sp := titleSpider("conddont", base)
	sp.StartURLs = []string{base + "/other/0"}
	sp.Settings.PerHostConcurrency = -1
	sp.Settings.ObeyRobots = new(bool)
	sp.Settings.Capacity = n
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	layout := streams.NewLayout("conddont", 1)
	all := slices.Concat(paths("p", n), paths("plain", plain))

	sink := newMemSink()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- runCrawl(runCtx, t, rdb, sp, sink, func(c *handlers.RunConfig) {
			c.UntilDone = false
			c.Continuous = &inspect.Continuous{On: true}
		})
	}()
	for r := range rounds + 1 {
		for _, p := range all {
			if err := rdb.LPush(ctx, layout.Global.Seeds, fmt.Sprintf(`{"url": %q, "dont_filter": true}`, base+p)).Err(); err != nil {
				t.Fatal(err)
			}
		}
		waitUntil(ctx, t, fmt.Sprintf("round %d", r+1), func() bool {
			log := site.answers()
			for _, p := range all {
				if len(log[p]) != r+1 {
					return false
				}
			}
			return len(log["/other/0"]) == 1
		})
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	log := site.answers()
	want := map[string][]string{"/other/0": {"200"}}
	for _, p := range paths("p", n) {
		want[p] = []string{"200", "c304", "c304"}
	}
	for _, p := range paths("plain", plain) {
		want[p] = []string{"200", "200", "200"}
	}
	checkAnswers(t, want, log)
	for key, times := range sink.keys() {
		if times != 1 {
			t.Errorf("item %s stored %d times, want once", key, times)
		}
	}
	if got := storedValidators(ctx, t, rdb, "conddont"); got != n {
		t.Errorf("validators of %d URLs stored, want %d (the pages pushed again that send them)", got, n)
	}
}
