package webtest

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
)

// HTTPProxy is a forward HTTP proxy on loopback for tests: it relays plain-HTTP
// requests (absolute-URI form) and counts them. With User set it demands those
// credentials (Proxy-Authorization: Basic) and answers 407 without them.
type HTTPProxy struct {
	// URL is the proxy's URL, credentials included when it demands them.
	URL        string
	srv        *httptest.Server
	user, pass string
	requests   atomic.Int64
}

// NewHTTPProxy starts a proxy; user and pass may be empty (no credentials demanded).
func NewHTTPProxy(user, pass string) *HTTPProxy {
	p := &HTTPProxy{user: user, pass: pass}
	tr := &http.Transport{Proxy: nil}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.user != "" {
			want := "Basic " + base64.StdEncoding.EncodeToString([]byte(p.user+":"+p.pass))
			if r.Header.Get("Proxy-Authorization") != want {
				w.Header().Set("Proxy-Authenticate", `Basic realm="test"`)
				http.Error(w, "proxy credentials", http.StatusProxyAuthRequired)
				return
			}
		}
		if !r.URL.IsAbs() {
			http.Error(w, "not a proxy request", http.StatusBadRequest)
			return
		}
		p.requests.Add(1)
		out := r.Clone(r.Context())
		out.RequestURI = ""
		out.Header.Del("Proxy-Authorization")
		resp, err := tr.RoundTrip(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.Header().Set("Via", "1.1 webtest-proxy")
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	p.URL = p.srv.URL
	if user != "" {
		p.URL = "http://" + user + ":" + pass + "@" + p.srv.Listener.Addr().String()
	}
	return p
}

// Requests returns how many requests the proxy relayed.
func (p *HTTPProxy) Requests() int64 { return p.requests.Load() }

// Close stops the proxy.
func (p *HTTPProxy) Close() { p.srv.Close() }

// SOCKS5Proxy is a SOCKS5 proxy (RFC 1928, no authentication, CONNECT only) on
// loopback for tests. It counts the connections it relayed.
type SOCKS5Proxy struct {
	// URL is "socks5://127.0.0.1:<port>".
	URL   string
	ln    net.Listener
	conns atomic.Int64
	wg    sync.WaitGroup
	mu    sync.Mutex
	open  map[net.Conn]bool
}

// NewSOCKS5Proxy starts a SOCKS5 proxy.
func NewSOCKS5Proxy() (*SOCKS5Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &SOCKS5Proxy{URL: "socks5://" + ln.Addr().String(), ln: ln, open: map[net.Conn]bool{}}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			p.open[c] = true
			p.mu.Unlock()
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				p.serve(c)
				p.mu.Lock()
				delete(p.open, c)
				p.mu.Unlock()
			}()
		}
	}()
	return p, nil
}

// Connections returns how many CONNECTs the proxy relayed.
func (p *SOCKS5Proxy) Connections() int64 { return p.conns.Load() }

// Close stops the proxy, closes the connections it relays (idle keep-alive ones
// included) and waits for them to end.
func (p *SOCKS5Proxy) Close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for c := range p.open {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *SOCKS5Proxy) serve(c net.Conn) {
	defer c.Close()
	target, err := socksHandshake(c)
	if err != nil {
		return
	}
	up, err := net.Dial("tcp", target)
	if err != nil {
		_, _ = c.Write([]byte{5, 5, 0, 1, 0, 0, 0, 0, 0, 0}) // connection refused
		return
	}
	defer up.Close()
	if _, err := c.Write([]byte{5, 0, 0, 1, 0, 0, 0, 0, 0, 0}); err != nil {
		return
	}
	p.conns.Add(1)
	done := make(chan struct{})
	go func() { _, _ = io.Copy(up, c); _ = up.(*net.TCPConn).CloseWrite(); close(done) }()
	_, _ = io.Copy(c, up)
	_ = c.Close()
	<-done
}

// socksHandshake reads the greeting and the CONNECT request and returns the target.
func socksHandshake(c net.Conn) (string, error) {
	hdr := make([]byte, 2)
	if _, err := io.ReadFull(c, hdr); err != nil || hdr[0] != 5 {
		return "", errors.New("webtest: not socks5")
	}
	if _, err := io.ReadFull(c, make([]byte, hdr[1])); err != nil {
		return "", err
	}
	if _, err := c.Write([]byte{5, 0}); err != nil { // no authentication
		return "", err
	}
	req := make([]byte, 4)
	if _, err := io.ReadFull(c, req); err != nil || req[1] != 1 {
		return "", errors.New("webtest: only CONNECT")
	}
	var host string
	switch req[3] {
	case 1:
		b := make([]byte, 4)
		if _, err := io.ReadFull(c, b); err != nil {
			return "", err
		}
		host = net.IP(b).String()
	case 4:
		b := make([]byte, 16)
		if _, err := io.ReadFull(c, b); err != nil {
			return "", err
		}
		host = net.IP(b).String()
	case 3:
		n := make([]byte, 1)
		if _, err := io.ReadFull(c, n); err != nil {
			return "", err
		}
		b := make([]byte, n[0])
		if _, err := io.ReadFull(c, b); err != nil {
			return "", err
		}
		host = string(b)
	default:
		return "", errors.New("webtest: bad address type")
	}
	port := make([]byte, 2)
	if _, err := io.ReadFull(c, port); err != nil {
		return "", err
	}
	return net.JoinHostPort(host, strconv.Itoa(int(binary.BigEndian.Uint16(port)))), nil
}
