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

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestOneHostWhateverWayItsURLsWriteIt: links to one host written with upper case, a
// trailing dot, its scheme's default port or a port's leading zeros queue in that host's
// one queue, under its host key, so that its politeness holds across them. The host
// went to the frontier as the URL wrote it, and the frontier's normaliser kept the
// trailing dot and the zeros: three hosts, three queues, for one site.
func TestOneHostWhateverWayItsURLsWriteIt(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	sp := &spiders.Spider{Name: "onehost", StartURLs: []string{"http://shop.example/"}}
	var cands []frontier.Candidate
	for _, u := range []string{"http://shop.example/a", "HTTP://Shop.Example.:80/b", "http://SHOP.EXAMPLE./c", "http://shop.example:0080/d"} {
		c, err := handlers.CandidateFor(&spiders.Spider{}, &spiders.Request{URL: u})
		if err != nil {
			t.Fatal(err)
		}
		cands = append(cands, c)
	}
	f, err := handlers.NewFrontier(ctx, rdb, sp)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close(context.Background())
	e, err := f.Emit(ctx, 0, cands, nil)
	if err != nil || e.Requests != 4 {
		t.Fatalf("emit: %+v, %v; want 4 requests queued", e, err)
	}
	k := streams.NewLayout("onehost", 1).Parts[0]
	if got := hostsNamed(ctx, t, rdb, k); fmt.Sprint(got) != "[shop.example]" {
		t.Errorf("hosts in the frontier %v, want [shop.example]", got)
	}
}

// hostsNamed returns the hosts partition k's scheduling names: in host queue keys
// ("<host>|<band>"), host state keys, the ready and scheduled sets, and the leases.
func hostsNamed(ctx context.Context, t *testing.T, rdb redis.UniversalClient, k streams.Keys) []string {
	t.Helper()
	named := map[string]bool{}
	queues, err := rdb.Keys(ctx, k.HostQueues+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range queues {
		host, _, _ := strings.Cut(strings.TrimPrefix(q, k.HostQueues), "|")
		named[host] = true
	}
	states, err := rdb.Keys(ctx, k.HostStates+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range states {
		named[strings.TrimPrefix(h, k.HostStates)] = true
	}
	for _, set := range []string{k.Ready, k.Sched, k.Leases} {
		members, err := rdb.ZRange(ctx, set, 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range members {
			host, _, _ := strings.Cut(m, "|")
			named[host] = true
		}
	}
	out := make([]string, 0, len(named))
	for h := range named {
		out = append(out, h)
	}
	sort.Strings(out)
	return out
}

// TestIDNHostIsOneHostForDedupRobotsAndLimits: bücher.test written in Unicode, in
// punycode, in upper case with a trailing dot and with its default port written 080 is
// one host: the same path written both ways is fetched once (dedup), robots.txt is
// fetched once, and the host's limit (one at a time, 200ms apart) holds across every
// spelling. The site is reached through a proxy (the names do not resolve), which sees
// every request.
func TestIDNHostIsOneHostForDedupRobotsAndLimits(t *testing.T) {
	srv := streamstest.Start(t)
	var mu sync.Mutex
	var starts []time.Time
	hits := map[string]int{}
	inFlight, most := map[string]int{}, 0
	proxy := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.Host+r.URL.Path]++
		if r.URL.Path == "/robots.txt" {
			mu.Unlock()
			fmt.Fprint(w, "User-agent: *\nDisallow: /private/\n")
			return
		}
		if r.URL.Host == "xn--bcher-kva.test" {
			starts = append(starts, time.Now())
		}
		inFlight[r.URL.Host]++
		most = max(most, inFlight[r.URL.Host])
		mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		page(w, r.URL.Path)
		mu.Lock()
		inFlight[r.URL.Host]--
		mu.Unlock()
	}))
	sp := &spiders.Spider{Name: "idn", StartURLs: []string{"http://bücher.test/1", "http://xn--bcher-kva.test/1",
		"http://XN--BCHER-KVA.test./2", "http://bücher.test:080/3", "http://BÜCHER.test/4", "http://xn--bcher-kva.test:08520/5"},
		Settings: spiders.Settings{AllowPrivateNetworks: true, Proxies: []string{proxy}, PerHostConcurrency: 1,
			PerHostDelay: 200 * time.Millisecond}}
	sp.Handle("parse", func(ctx context.Context, res *spiders.Response, out *spiders.Output) error { return nil })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := runCrawl(ctx, t, srv.Client(), sp, newMemSink(), nil); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := map[string]int{"xn--bcher-kva.test/robots.txt": 1, "xn--bcher-kva.test/1": 1, "xn--bcher-kva.test/2": 1,
		"xn--bcher-kva.test/3": 1, "xn--bcher-kva.test/4": 1, "xn--bcher-kva.test:8520/robots.txt": 1, "xn--bcher-kva.test:8520/5": 1}
	if fmt.Sprint(hits) != fmt.Sprint(want) {
		t.Errorf("the proxy saw %v, want %v", hits, want)
	}
	if most != 1 {
		t.Errorf("%d requests at once to one host, want 1", most)
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i].Before(starts[j]) })
	if len(starts) != 4 {
		t.Fatalf("%d pages of xn--bcher-kva.test fetched, want 4", len(starts))
	}
	for i := 1; i < len(starts); i++ {
		if gap := starts[i].Sub(starts[i-1]); gap < 180*time.Millisecond {
			t.Errorf("pages %d and %d of the host started %v apart, want its delay (200ms)", i-1, i, gap)
		}
	}
}
