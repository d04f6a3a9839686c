package browser

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Dialer opens one connection a page makes (host:port), or refuses it. The fetch
// package's dialer is its network guard (no private address unless allowed), through
// the crawl's proxy when there is one; a refusal by the guard wraps ErrBlocked.
type Dialer func(ctx context.Context, network, addr string) (net.Conn, error)

// ErrBlocked marks a connection a Dialer refused because of where it leads.
var ErrBlocked = errors.New("browser: blocked address")

// Traffic is what a page's requests did, as its proxy saw them.
type Traffic struct {
	// Requests counts the connections (CONNECT tunnels) and plain HTTP requests the
	// page made through its proxy.
	Requests int64
	// Blocked counts those the dialer refused (ErrBlocked).
	Blocked int64
	// Failed counts those that failed otherwise (the host did not answer).
	Failed int64
	// Refused counts those Job.Request refused (the page's cap).
	Refused int64
	// Hosts counts Requests by host:port.
	Hosts map[string]int64
	// BlockedHosts lists the host:port of the refused ones, at most 16.
	BlockedHosts []string
}

// pageProxy is an HTTP forward proxy (plain requests and CONNECT tunnels) on its own
// port, through which one page, or the browser as a whole, makes every request. It
// dials with its Dialer, so the fetcher's network guard and the crawl's proxies apply
// to every request a page makes, whatever its scripts do; the browser is started with
// --proxy-server and --proxy-bypass-list=<-loopback>, and each page's browser context
// with its own proxy, so loopback goes through it too.
type pageProxy struct {
	ln  net.Listener
	srv *http.Server
	tr  *http.Transport

	requests, blocked, failed, refused atomic.Int64

	mu           sync.Mutex
	dial         Dialer                                                 // nil: every connection refused (a tab between pages)
	ask          func(ctx context.Context, addr string) (func(), error) // the page's Job.Request; nil: none
	pageDone     chan struct{}                                          // closed when the page ends
	hosts        map[string]int64
	blockedHosts []string
	tunnels      map[net.Conn]struct{}
	closed       bool
}

// discardLog silences the proxy server's own log (a page that hangs up mid-answer is
// not news).
var discardLog = log.New(io.Discard, "", 0)

// maxBlockedHosts bounds Traffic.BlockedHosts.
const maxBlockedHosts = 16

// newPageProxy starts a proxy listening on listen (host:port; port 0 picks one).
func newPageProxy(listen string, dial Dialer) (*pageProxy, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, err
	}
	p := &pageProxy{ln: ln, dial: dial, hosts: map[string]int64{}, tunnels: map[net.Conn]struct{}{}}
	p.tr = &http.Transport{
		DialContext:           p.dialCounted,
		DisableCompression:    true, // the browser asked for its encodings and decodes them
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       30 * time.Second,
		ResponseHeaderTimeout: time.Minute,
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second, ErrorLog: discardLog}
	go p.srv.Serve(ln) //nolint:errcheck // ends with Close
	return p, nil
}

// begin starts a page: its connections are dialled with dial and counted afresh, and
// ask (when set) is asked before each of its requests.
func (p *pageProxy) begin(dial Dialer, ask func(ctx context.Context, addr string) (func(), error)) {
	p.mu.Lock()
	p.dial, p.ask, p.pageDone = dial, ask, make(chan struct{})
	p.mu.Unlock()
}

// end ends a page: it returns the page's traffic, cuts its connections (the next page
// dials its own, through its own dialer) and refuses new ones until the next begin.
func (p *pageProxy) end() Traffic {
	t := p.traffic()
	p.mu.Lock()
	p.dial, p.ask = nil, nil
	if p.pageDone != nil {
		close(p.pageDone)
		p.pageDone = nil
	}
	for c := range p.tunnels {
		c.Close()
	}
	clear(p.tunnels)
	p.hosts, p.blockedHosts = map[string]int64{}, nil
	p.requests.Store(0)
	p.blocked.Store(0)
	p.failed.Store(0)
	p.refused.Store(0)
	p.mu.Unlock()
	p.tr.CloseIdleConnections()
	return t
}

// addr is where the proxy listens (host:port).
func (p *pageProxy) addr() string { return p.ln.Addr().String() }

// close stops the proxy and cuts its tunnels.
func (p *pageProxy) close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.tunnels {
		c.Close()
	}
	p.mu.Unlock()
	p.srv.Close()
	p.tr.CloseIdleConnections()
}

// traffic returns what went through the proxy so far.
func (p *pageProxy) traffic() Traffic {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := Traffic{Requests: p.requests.Load(), Blocked: p.blocked.Load(), Failed: p.failed.Load(), Refused: p.refused.Load(),
		Hosts: make(map[string]int64, len(p.hosts)), BlockedHosts: append([]string(nil), p.blockedHosts...)}
	for h, n := range p.hosts {
		t.Hosts[h] = n
	}
	return t
}

// ServeHTTP tunnels a CONNECT and forwards any other request given in absolute form.
func (p *pageProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		p.tunnel(w, r)
		return
	}
	if !r.URL.IsAbs() || r.URL.Host == "" {
		http.Error(w, "streamcrawl page proxy: want a request in absolute form", http.StatusBadRequest)
		return
	}
	p.forward(w, r)
}

// count counts one request of the page to addr (host:port).
func (p *pageProxy) count(addr string) {
	p.requests.Add(1)
	p.mu.Lock()
	p.hosts[addr]++
	p.mu.Unlock()
}

// asked asks the page's Job.Request about a request to addr, within ctx and the page,
// and returns what to call when the request is over. A request still waiting when its
// page ends is refused, and so is any request of a tab between pages (an old page's
// request would otherwise go out on a kept-alive connection). A refusal by
// Job.Request is counted.
func (p *pageProxy) asked(ctx context.Context, addr string) (func(), error) {
	p.mu.Lock()
	ask, done, dial := p.ask, p.pageDone, p.dial
	p.mu.Unlock()
	if dial == nil {
		return nil, errBetweenPages
	}
	if ask == nil {
		return func() {}, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-done:
			cancel()
		case <-ctx.Done():
		}
	}()
	over, err := ask(ctx, addr)
	if err == nil {
		select {
		case <-done:
			over()
			over, err = nil, errBetweenPages
		default:
		}
	}
	if err != nil {
		p.refused.Add(1)
		return nil, err
	}
	if over == nil {
		over = func() {}
	}
	return over, nil
}

// errBetweenPages refuses the connections of a tab between two pages.
var errBetweenPages = fmt.Errorf("%w: no page is loading", ErrBlocked)

// dialCounted dials addr with the page's dialer, counting a refusal or failure.
func (p *pageProxy) dialCounted(ctx context.Context, network, addr string) (net.Conn, error) {
	p.mu.Lock()
	dial := p.dial
	p.mu.Unlock()
	if dial == nil {
		return nil, errBetweenPages
	}
	c, err := dial(ctx, network, addr)
	switch {
	case errors.Is(err, ErrBlocked):
		p.blocked.Add(1)
		p.mu.Lock()
		if len(p.blockedHosts) < maxBlockedHosts {
			p.blockedHosts = append(p.blockedHosts, addr)
		}
		p.mu.Unlock()
	case err != nil:
		p.failed.Add(1)
	}
	return c, err
}

// tunnel answers a CONNECT: it dials the target and copies bytes both ways until
// either side closes.
func (p *pageProxy) tunnel(w http.ResponseWriter, r *http.Request) {
	target := r.Host
	if _, _, err := net.SplitHostPort(target); err != nil {
		http.Error(w, "streamcrawl page proxy: CONNECT wants host:port", http.StatusBadRequest)
		return
	}
	p.count(target)
	over, err := p.asked(r.Context(), target)
	if err != nil {
		http.Error(w, "streamcrawl page proxy: "+err.Error(), http.StatusTooManyRequests)
		return
	}
	// What goes through the tunnel is not seen: its request is over once it is open.
	up, err := p.dialCounted(r.Context(), "tcp", target)
	over()
	if err != nil {
		http.Error(w, "streamcrawl page proxy: "+refusal(err), statusOf(err))
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		http.Error(w, "streamcrawl page proxy: cannot tunnel", http.StatusInternalServerError)
		return
	}
	down, buf, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	if !p.track(down, up) {
		return
	}
	defer p.untrack(down, up)
	if _, err := down.Write([]byte("HTTP/1.1 200 Connection Established\r\n\r\n")); err != nil {
		return
	}
	done := make(chan struct{}, 2)
	go func() {
		if n := buf.Reader.Buffered(); n > 0 { // bytes the client sent after its CONNECT
			b, _ := buf.Reader.Peek(n)
			up.Write(b) //nolint:errcheck // the copy below sees a broken connection
		}
		io.Copy(up, down) //nolint:errcheck // ends when either side closes
		closeWrite(up)
		done <- struct{}{}
	}()
	go func() {
		io.Copy(down, up) //nolint:errcheck // ends when either side closes
		closeWrite(down)
		done <- struct{}{}
	}()
	<-done
	<-done
}

// track registers a tunnel's two connections so that close cuts them; false (and both
// closed) when the proxy is closed already.
func (p *pageProxy) track(a, b net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		a.Close()
		b.Close()
		return false
	}
	p.tunnels[a], p.tunnels[b] = struct{}{}, struct{}{}
	return true
}

func (p *pageProxy) untrack(a, b net.Conn) {
	p.mu.Lock()
	delete(p.tunnels, a)
	delete(p.tunnels, b)
	p.mu.Unlock()
	a.Close()
	b.Close()
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite() //nolint:errcheck // best effort: the other side sees EOF
		return
	}
	c.Close()
}

// hostPort is u's host:port, the scheme's port when it has none.
func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	if u.Scheme == "https" {
		return net.JoinHostPort(u.Hostname(), "443")
	}
	return net.JoinHostPort(u.Hostname(), "80")
}

// hopHeaders are the headers of one hop that a proxy does not pass on.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// forward sends a plain HTTP request on and copies its answer back.
func (p *pageProxy) forward(w http.ResponseWriter, r *http.Request) {
	addr := hostPort(r.URL)
	p.count(addr)
	over, err := p.asked(r.Context(), addr)
	if err != nil {
		http.Error(w, "streamcrawl page proxy: "+err.Error(), http.StatusTooManyRequests)
		return
	}
	defer over()
	out := r.Clone(r.Context())
	out.RequestURI = ""
	for _, h := range hopHeaders {
		out.Header.Del(h)
	}
	resp, err := p.tr.RoundTrip(out)
	if err != nil {
		http.Error(w, "streamcrawl page proxy: "+refusal(err), statusOf(err))
		return
	}
	defer resp.Body.Close()
	for _, h := range hopHeaders {
		resp.Header.Del(h)
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	io.Copy(flushWriter{w}, resp.Body) //nolint:errcheck // the browser sees a cut body
}

// flushWriter flushes after every write, so that streamed answers reach the page as
// they come.
type flushWriter struct{ w http.ResponseWriter }

func (f flushWriter) Write(b []byte) (int, error) {
	n, err := f.w.Write(b)
	if fl, ok := f.w.(http.Flusher); ok {
		fl.Flush()
	}
	return n, err
}

// statusOf is the proxy's answer to a failed dial: 403 for a refused address, 502 for
// a host that did not answer.
func statusOf(err error) int {
	if errors.Is(err, ErrBlocked) {
		return http.StatusForbidden
	}
	return http.StatusBadGateway
}

// refusal is the text of a failed dial for the page (no internal detail).
func refusal(err error) string {
	if errors.Is(err, ErrBlocked) {
		return "address not allowed"
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		msg = msg[i+2:]
	}
	return msg
}
