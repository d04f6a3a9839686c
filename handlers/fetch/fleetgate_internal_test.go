package fetch

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
	"github.com/streamcrawl/streamcrawl/streams/hostgate"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestSharedHostGate: a request to a shared host passes its gate and gives the slot
// back once answered; one whose host's gate stays taken longer than gateMaxWait (a
// holder of another crawl, its lease long) is not sent and goes back to its host's
// queue, counted.
func TestSharedHostGate(t *testing.T) {
	var served atomic.Int64
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<html><body>ok</body></html>"))
	}))
	defer site.Close()
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	layout := streams.NewLayout("gate", 1)
	k := layout.Parts[0]
	settings := spiders.Settings{AllowPrivateNetworks: true, ObeyRobots: new(bool), PerHostConcurrency: -1}
	hosts, err := frontier.New(frontier.Config{Client: rdb, Layout: layout})
	if err != nil {
		t.Fatal(err)
	}
	defer hosts.Close(ctx)
	counters := streams.NewCounters(ctx, rdb, layout.Global.Stats, 0, nil)
	f, err := New(Config{Settings: settings, Frontier: hosts, Client: rdb, Layout: layout, Counters: counters,
		SharedHosts: func(string) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	req := &spiders.Request{URL: site.URL + "/a"}
	host := spiders.HostKey(req.URL)
	res, err := f.Do(ctx, req, Delivery{})
	res.Release()
	if err != nil || res.Outcome != Publish || served.Load() != 1 {
		t.Fatalf("request through a free gate: outcome %v (%s), %v, %d sent; want published, 1 sent", res.Outcome, res.Reason, err, served.Load())
	}
	for field := range rdb.HGetAll(ctx, streams.HostGate(host)).Val() {
		if strings.HasPrefix(field, "t:") {
			t.Errorf("the gate still holds slot %s after the answer", field)
		}
	}

	// Another crawl's fetcher holds the host's one slot (and died: it never gives it back).
	gate, err := hostgate.New(rdb, hostgate.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if w, err := gate.Acquire(ctx, host, hostgate.Rule{Concurrency: 1}, "dead", time.Minute); err != nil || w != 0 {
		t.Fatalf("the other crawl's ask: wait %s, %v", w, err)
	}
	began := time.Now()
	res, err = f.Do(ctx, req, Delivery{})
	res.Release()
	if err != nil || res.Outcome != Drop || res.Reason != DropRequeued || served.Load() != 1 {
		t.Fatalf("request at a taken gate: outcome %v (%s), %v, %d sent; want dropped as requeued, none sent", res.Outcome, res.Reason, err, served.Load()-1)
	}
	if waited := time.Since(began); waited < gateMaxWait-time.Second {
		t.Errorf("gave up after %s, want about gateMaxWait (%s)", waited, gateMaxWait)
	}
	if n := rdb.LLen(ctx, k.HostQueues+host+"|0").Val(); n != 1 {
		t.Errorf("the host's queue holds %d, want the request back (1)", n)
	}
	if err := counters.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := rdb.HGet(ctx, layout.Global.Stats, "requests_requeued_host_gate").Int(); n != 1 {
		t.Errorf("requests_requeued_host_gate %d, want 1", n)
	}
}

// TestSharedHostRetryAfterHoldsEveryCrawl: a 429 with Retry-After from a shared host
// holds the host at its gate, so another crawl's request waits too.
func TestSharedHostRetryAfterHoldsEveryCrawl(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3")
		http.Error(w, "slow down", http.StatusTooManyRequests)
	}))
	defer site.Close()
	rdb := streamstest.Start(t).Client()
	ctx := context.Background()
	layout := streams.NewLayout("gate", 1)
	hosts, err := frontier.New(frontier.Config{Client: rdb, Layout: layout})
	if err != nil {
		t.Fatal(err)
	}
	defer hosts.Close(ctx)
	f, err := New(Config{Settings: spiders.Settings{AllowPrivateNetworks: true, ObeyRobots: new(bool), PerHostConcurrency: -1},
		Frontier: hosts, Client: rdb, Layout: layout, SharedHosts: func(string) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	req := &spiders.Request{URL: site.URL + "/"}
	res, err := f.Do(ctx, req, Delivery{})
	res.Release()
	if err != nil || res.Outcome != Retry {
		t.Fatalf("a 429: outcome %v, %v; want a retry", res.Outcome, err)
	}
	gate, err := hostgate.New(rdb, hostgate.Config{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := gate.Acquire(ctx, spiders.HostKey(req.URL), hostgate.Rule{}, "other-crawl", time.Minute)
	if err != nil || w < 2*time.Second || w > 3*time.Second {
		t.Fatalf("another crawl's ask after the 429 waits %s (%v), want about the Retry-After of 3s", w, err)
	}
}
