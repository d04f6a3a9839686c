package fetch_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/streamcrawl/streamcrawl/handlers/fetch"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestHostStatsAreByHostKey: three URLs that write one host three ways (case, a port's
// leading zero) count as one host in the crawl's per-host figures. They were keyed by
// the URL's raw host: three rows for one host on the dashboard.
func TestHostStatsAreByHostKey(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<p>ok</p>"))
	}))
	defer site.Close()
	port := site.Listener.Addr().(*net.TCPAddr).Port
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	layout := streams.NewLayout("hoststats", 1)
	hosts, err := frontier.New(frontier.Config{Client: rdb, Layout: layout})
	if err != nil {
		t.Fatal(err)
	}
	defer hosts.Close(context.Background())
	stats := streams.NewHostStats(context.Background(), rdb, layout)
	off := false
	f, err := fetch.New(fetch.Config{Settings: spiders.Settings{ObeyRobots: &off, AllowNetworks: []string{"127.0.0.1/32", "::1/128"}},
		Frontier: hosts, Client: rdb, Layout: layout, HostStats: stats})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{
		"http://localhost:" + strconv.Itoa(port) + "/a",
		"http://LOCALHOST:" + strconv.Itoa(port) + "/b",
		"http://localhost:0" + strconv.Itoa(port) + "/c",
	} {
		res, err := f.Do(ctx, &spiders.Request{URL: u}, fetch.Delivery{})
		res.Release()
		if err != nil || res.Outcome != fetch.Publish {
			t.Fatalf("fetch %s: outcome %d, %v", u, res.Outcome, err)
		}
	}
	stats.Close(context.Background()) // flushes
	got, err := streams.ReadHostStats(ctx, rdb, layout, 2)
	if err != nil {
		t.Fatal(err)
	}
	key := spiders.HostKey("http://localhost:" + strconv.Itoa(port))
	if len(got) != 1 || got[key] == nil || got[key].Requests != 3 {
		t.Fatalf("host stats %v; want one host, %s, with 3 requests", got, key)
	}
}
