package fetch

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/handlers/fetch/browser"
	"github.com/streamcrawl/streamcrawl/spiders"
)

// connectProxy is an HTTP proxy that only tunnels (CONNECT), and records the targets.
type connectProxy struct {
	*httptest.Server
	mu      sync.Mutex
	targets []string
}

func newConnectProxy(t *testing.T) *connectProxy {
	p := &connectProxy{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect {
			http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
			return
		}
		p.mu.Lock()
		p.targets = append(p.targets, r.Host)
		p.mu.Unlock()
		up, err := net.Dial("tcp", r.Host)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		down, _, _ := w.(http.Hijacker).Hijack()
		down.Write([]byte("HTTP/1.1 200 Connection Established\r\n\r\n")) //nolint:errcheck // test
		go func() { io.Copy(up, down); up.Close() }()                     //nolint:errcheck // test
		io.Copy(down, up)                                                 //nolint:errcheck // test
		down.Close()
	}))
	t.Cleanup(p.Server.Close)
	return p
}

// TestPageDialerThroughProxy: a rendered page's connections go through the request's
// proxy (a CONNECT tunnel), the guard checks each target first (a private target is
// refused with browser.ErrBlocked, the proxy never asked), and without a proxy the
// guard dials itself.
func TestPageDialerThroughProxy(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") })) //nolint:errcheck // test
	defer site.Close()
	proxy := newConnectProxy(t)
	su, _ := url.Parse(site.URL)
	// The site and the proxy are on loopback: the guard allows the site by its host
	// name ("localhost") only, not by address; the spider's proxy is dialled as it is.
	s := spiders.Settings{AllowNetworks: []string{"localhost"}, Proxies: []string{proxy.URL}}
	s.SetDefaults()
	sh := &shared{settings: s, guard: newGuard(s), proxies: newProxyPool(s), log: zap.NewNop()}
	b := newBrowserFetch(sh, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	dial, release, err := b.pageDialer(ctx, &spiders.Request{URL: "http://localhost/"})
	if err != nil {
		t.Fatal(err)
	}
	defer release(false)
	c, err := dial(ctx, "tcp", net.JoinHostPort("localhost", su.Port()))
	if err != nil {
		t.Fatalf("dial the allowed site through the proxy: %v", err)
	}
	io.WriteString(c, "GET / HTTP/1.0\r\nHost: localhost\r\n\r\n") //nolint:errcheck // test
	body, _ := io.ReadAll(c)
	c.Close()
	if !strings.HasSuffix(string(body), "hello") {
		t.Errorf("through the tunnel: %q", body)
	}
	_, err = dial(ctx, "tcp", "169.254.169.254:80")
	if !errors.Is(err, browser.ErrBlocked) {
		t.Errorf("metadata address through the proxy: %v, want ErrBlocked", err)
	}
	proxy.mu.Lock()
	targets := strings.Join(proxy.targets, ",")
	proxy.mu.Unlock()
	if targets != "localhost:"+su.Port() {
		t.Errorf("the proxy was asked for %q, want only the site", targets)
	}

	// Without a proxy: the guard itself refuses the loopback site (not allowed by
	// address) and the metadata address.
	s.Proxies = nil
	sh = &shared{settings: s, guard: newGuard(s), log: zap.NewNop()}
	b = newBrowserFetch(sh, Config{})
	dial, release, _ = b.pageDialer(ctx, &spiders.Request{URL: site.URL})
	defer release(false)
	for _, addr := range []string{su.Host, "169.254.169.254:80", "10.1.2.3:80"} {
		if _, err := dial(ctx, "tcp", addr); !errors.Is(err, browser.ErrBlocked) {
			t.Errorf("direct dial of %s: %v, want ErrBlocked", addr, err)
		}
	}
}
