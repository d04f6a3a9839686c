package handlers_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/handlers/fetch"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/spiders/webtest"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// proxiedSpider crawls a chain site of n pages on loopback through proxies.
func proxiedSpider(name, base string, proxies ...string) *spiders.Spider {
	sp := titleSpider(name, base)
	sp.Settings.AllowNetworks = []string{"127.0.0.1/32"}
	sp.Settings.Proxies = proxies
	return sp
}

// TestRequestsGoThroughAnHTTPProxyWithCredentialsNeverLogged.
func TestRequestsGoThroughAnHTTPProxyWithCredentialsNeverLogged(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	site := newChainSite(20, 0)
	base := serve(t, site)
	proxy := webtest.NewHTTPProxy("crawler", "s3cret-pw")
	defer proxy.Close()
	sp := proxiedSpider("viahttp", base, proxy.URL)
	core, logs := observer.New(zapcore.DebugLevel)
	sink := newMemSink()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err := runCrawl(ctx, t, srv.Client(), sp, sink, func(c *handlers.RunConfig) { c.Logger = zap.New(core) })
	if err != nil {
		t.Fatal(err)
	}
	wantAllPages(t, sink, base, 20)
	if n := proxy.Requests(); n != 21 { // 20 pages and robots.txt
		t.Errorf("proxy relayed %d requests, want 21", n)
	}
	for _, e := range logs.All() {
		line := e.Message
		for k, v := range e.ContextMap() {
			line += fmt.Sprintf(" %s=%v", k, v)
		}
		if strings.Contains(line, "s3cret-pw") {
			t.Fatalf("a log line shows the proxy password: %s", line)
		}
	}
}

// TestRequestsGoThroughASOCKS5Proxy, from the settings and from a request's meta.
func TestRequestsGoThroughASOCKS5Proxy(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	site := newChainSite(20, 0)
	base := serve(t, site)
	socks, err := webtest.NewSOCKS5Proxy()
	if err != nil {
		t.Fatal(err)
	}
	defer socks.Close()
	sp := proxiedSpider("viasocks", base, socks.URL)
	sink := newMemSink()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := runCrawl(ctx, t, srv.Client(), sp, sink, nil); err != nil {
		t.Fatal(err)
	}
	wantAllPages(t, sink, base, 20)
	if socks.Connections() == 0 {
		t.Fatal("no connection went through the SOCKS5 proxy")
	}

	// Per request: a spider without proxies, one request naming the proxy in its meta.
	plain := proxiedSpider("permeta", base)
	layout := streams.NewLayout("permeta", 1)
	hosts, err := frontier.New(frontier.Config{Client: srv.Client(), Layout: layout})
	if err != nil {
		t.Fatal(err)
	}
	defer hosts.Close(context.Background())
	f, err := fetch.New(fetch.Config{Settings: plain.Settings, Frontier: hosts, Client: srv.Client(), Layout: layout})
	if err != nil {
		t.Fatal(err)
	}
	before := socks.Connections()
	r, err := f.Do(ctx, &spiders.Request{URL: base + "/3", Meta: map[string]any{"proxy": socks.URL}}, fetch.Delivery{})
	defer r.Release()
	res := r.Response
	if err != nil || res == nil || res.Status != 200 {
		t.Fatalf("fetch with meta proxy: %v %v", res, err)
	}
	if socks.Connections() == before {
		t.Error("the meta proxy was not used")
	}
}

// TestProxyRotationBenchesTheFailingProxy: of two proxies one is dead; after
// proxy_ban_after failures it is benched, its requests are retried through the other,
// and the crawl completes with every page.
func TestProxyRotationBenchesTheFailingProxy(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	site := newChainSite(30, 0)
	base := serve(t, site)
	good := webtest.NewHTTPProxy("", "")
	defer good.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there any more: connection refused
	sp := proxiedSpider("rotation", base, dead, good.URL)
	sp.Settings.ProxyBanAfter = 2
	sp.Settings.ProxyConcurrency = 4
	sp.Settings.MaxRetries = new(5)
	sink := newMemSink()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := runCrawl(ctx, t, srv.Client(), sp, sink, nil); err != nil {
		t.Fatal(err)
	}
	wantAllPages(t, sink, base, 30)
	st, err := inspect.ReadStatus(ctx, srv.Client(), streams.NewLayout("rotation", 1))
	if err != nil {
		t.Fatal(err)
	}
	if st.Stats["proxies_benched"] != 1 || st.Stats["proxy_failures"] != 2 || st.DeadLetters != 0 {
		t.Errorf("proxies_benched = %d (want 1), proxy_failures = %d (want 2), dead letters %d (want 0)",
			st.Stats["proxies_benched"], st.Stats["proxy_failures"], st.DeadLetters)
	}
	if n := good.Requests(); n < 31 {
		t.Errorf("the good proxy relayed %d requests, want every page and robots.txt (31)", n)
	}
}
