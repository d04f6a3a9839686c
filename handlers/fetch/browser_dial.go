package fetch

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	xproxy "golang.org/x/net/proxy"

	"github.com/streamcrawl/streamcrawl/handlers/fetch/browser"
	"github.com/streamcrawl/streamcrawl/spiders"
)

// BrowserDialer returns the network guard of s as a browser.Dialer: what a browser
// pool dials for requests no page made (the browsers' --proxy-server). Pages get a
// dialer of their own from the fetcher (their request's proxy included).
func BrowserDialer(s spiders.Settings) browser.Dialer {
	s.SetDefaults()
	return guardedDial(s)
}

// guardedDial dials through the guard of s (directly when private networks are
// allowed); a refused address wraps browser.ErrBlocked.
func guardedDial(s spiders.Settings) browser.Dialer {
	d := net.Dialer{Timeout: s.ConnectTimeout}
	dial := d.DialContext
	if g := newGuard(s); g != nil {
		dial = g.dialer(d)
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if errors.Is(err, errBlockedAddress) {
			return nil, fmt.Errorf("%w: %w", browser.ErrBlocked, err)
		}
		return c, err
	}
}

// pageDialer returns the dialer of one rendered page: through the guard, or through
// the request's proxy (its meta "proxy", else the next of the rotation) with the guard
// applied to each target; and the function that gives the proxy back (failed: it
// failed the page).
func (b *browserFetch) pageDialer(ctx context.Context, req *spiders.Request) (browser.Dialer, func(failed bool), error) {
	noop := func(bool) {}
	u, ps, err := pickProxy(ctx, b.proxies, req)
	if err != nil {
		return nil, noop, err
	}
	if u == nil {
		return b.dial, noop, nil
	}
	release := func(failed bool) {
		if failed {
			b.count("proxy_failures", 1)
		}
		if ps != nil && b.proxies.release(ps, failed) {
			b.count("proxies_benched", 1)
		}
	}
	b.count("proxied_requests", 1)
	return b.viaProxy(u), release, nil
}

// viaProxy dials each target through the proxy u: a CONNECT tunnel through an http(s)
// proxy, or SOCKS5. The proxy resolves and connects to the target, so the guard checks
// the target here first.
func (b *browserFetch) viaProxy(u *url.URL) browser.Dialer {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if b.guard != nil {
			if err := b.guard.checkProxiedTarget(ctx, &url.URL{Host: addr}); err != nil {
				if errors.Is(err, errBlockedAddress) {
					return nil, fmt.Errorf("%w: %w", browser.ErrBlocked, err)
				}
				return nil, err
			}
		}
		switch u.Scheme {
		case "socks5", "socks5h":
			var auth *xproxy.Auth
			if u.User != nil {
				pw, _ := u.User.Password()
				auth = &xproxy.Auth{User: u.User.Username(), Password: pw}
			}
			d, err := xproxy.SOCKS5("tcp", u.Host, auth, dialerFunc(b.proxyDial))
			if err != nil {
				return nil, err
			}
			return d.(xproxy.ContextDialer).DialContext(ctx, network, addr)
		}
		return b.connect(ctx, u, addr)
	}
}

// proxyDial dials a proxy itself: the guard lets the spider's proxies through.
func (b *browserFetch) proxyDial(ctx context.Context, network, addr string) (net.Conn, error) {
	return b.rawDial(ctx, network, addr)
}

// connect opens a CONNECT tunnel to addr through the http(s) proxy u.
func (b *browserFetch) connect(ctx context.Context, u *url.URL, addr string) (net.Conn, error) {
	c, err := b.proxyDial(ctx, "tcp", u.Host)
	if err != nil {
		return nil, fmt.Errorf("proxyconnect %s: %w", u.Redacted(), err)
	}
	if u.Scheme == "https" {
		tc := tls.Client(c, &tls.Config{ServerName: u.Hostname()})
		if err := tc.HandshakeContext(ctx); err != nil {
			c.Close()
			return nil, fmt.Errorf("proxyconnect %s: %w", u.Redacted(), err)
		}
		c = tc
	}
	if d, ok := ctx.Deadline(); ok {
		c.SetDeadline(d) //nolint:errcheck // cleared below
	}
	req := &http.Request{Method: http.MethodConnect, URL: &url.URL{Opaque: addr}, Host: addr, Header: http.Header{}}
	if u.User != nil {
		req.Header.Set("Proxy-Authorization", "Basic "+basicAuth(u.User))
	}
	br := bufio.NewReader(c)
	if err := req.Write(c); err != nil {
		c.Close()
		return nil, fmt.Errorf("proxyconnect %s: %w", u.Redacted(), err)
	}
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("proxyconnect %s: %w", u.Redacted(), err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		c.Close()
		return nil, fmt.Errorf("proxyconnect %s: CONNECT %s: %s", u.Redacted(), addr, resp.Status)
	}
	c.SetDeadline(time.Time{}) //nolint:errcheck // a tunnel lives as long as the page
	if br.Buffered() > 0 {
		return &bufferedConn{Conn: c, r: br}, nil
	}
	return c, nil
}

// basicAuth is the Basic credentials of user.
func basicAuth(user *url.Userinfo) string {
	pw, _ := user.Password()
	return base64.StdEncoding.EncodeToString([]byte(user.Username() + ":" + pw))
}

// bufferedConn is a connection whose first bytes were read ahead.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// dialerFunc adapts a dial function to x/net/proxy.
type dialerFunc func(ctx context.Context, network, addr string) (net.Conn, error)

func (f dialerFunc) Dial(string, string) (net.Conn, error) {
	return nil, errors.New("fetch: dial without a context") // x/net/proxy uses DialContext
}

func (f dialerFunc) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return f(ctx, network, addr)
}
