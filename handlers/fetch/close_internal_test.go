package fetch

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestCloseEndsIdleConnections: a fetcher's keep-alive connections are closed with it,
// as the site sees, and not left for the transport's 90 s idle timeout (a fleet worker
// makes a fetcher per run, and kept every ended run's connections: its RSS doubled
// over 50 crawls).
func TestCloseEndsIdleConnections(t *testing.T) {
	var open atomic.Int64
	site := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<html><body>ok</body></html>"))
	}))
	site.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			open.Add(1)
		case http.StateClosed, http.StateHijacked:
			open.Add(-1)
		}
	}
	site.Start()
	defer site.Close()
	rdb := streamstest.Start(t).Client()
	ctx := context.Background()
	layout := streams.NewLayout("close", 1)
	hosts, err := frontier.New(frontier.Config{Client: rdb, Layout: layout})
	if err != nil {
		t.Fatal(err)
	}
	defer hosts.Close(ctx)
	f, err := New(Config{Settings: spiders.Settings{AllowPrivateNetworks: true, ObeyRobots: new(bool), PerHostConcurrency: -1},
		Frontier: hosts, Client: rdb, Layout: layout})
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.Do(ctx, &spiders.Request{URL: site.URL + "/"}, Delivery{})
	res.Release()
	if err != nil || res.Outcome != Publish {
		t.Fatalf("fetch: outcome %v, %v; want it published", res.Outcome, err)
	}
	if n := open.Load(); n != 1 {
		t.Fatalf("%d connections open after the fetch, want its keep-alive one", n)
	}
	if err := f.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); open.Load() > 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if n := open.Load(); n != 0 {
		t.Errorf("%d connections still open 30 s after Close, want none", n)
	}
}
