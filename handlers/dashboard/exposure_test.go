package dashboard_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/handlers/dashboard"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// serve starts d.Serve on a free loopback port and returns its address.
func serve(t *testing.T, d *dashboard.Dashboard) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Serve(ctx, ln, d.Handler()) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// TestDashboardRefusesOtherHosts: a request naming another host (what a page of another
// site sends after rebinding its name to the dashboard's address) is refused, both a read
// and the retry POST, with a body that says how to allow a name; IP addresses, localhost
// and names given in AllowHosts are answered.
func TestDashboardRefusesOtherHosts(t *testing.T) {
	srv := streamstest.Start(t)
	d, err := dashboard.New(dashboard.Config{Client: srv.Client(), Crawl: "shop", AllowHosts: []string{"crawl.internal"}})
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, d)
	_, port, _ := net.SplitHostPort(addr)
	do := func(method, path, host string) (int, string) {
		t.Helper()
		var body io.Reader
		if method == http.MethodPost {
			body = strings.NewReader(`{"ids": ["1-0"]}`)
		}
		req, err := http.NewRequest(method, "http://"+addr+path, body)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	for _, host := range []string{"evil.example", "evil.example:" + port, "EVIL.example.", "localhost.evil.example", "127.0.0.1.evil.example:" + port} {
		for _, c := range []struct{ method, path string }{{"GET", "/"}, {"GET", "/api/dead"}, {"GET", "/api/status"}, {"POST", "/api/dead/retry"}} {
			code, body := do(c.method, c.path, host)
			if code != http.StatusMisdirectedRequest || !strings.Contains(body, "--allow-host") {
				t.Errorf("%s %s with Host %q: %d %q, want 421 saying --allow-host", c.method, c.path, host, code, body)
			}
		}
	}
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "LocalHost", "[::1]:" + port, "10.1.2.3:" + port, "crawl.internal:" + port, "Crawl.Internal."} {
		if code, body := do("GET", "/api/status", host); code != http.StatusOK {
			t.Errorf("GET /api/status with Host %q: %d %q, want 200", host, code, body)
		}
		// Allowed through the check, the retry reaches the dead letters (none: 409).
		if code, body := do("POST", "/api/dead/retry", host); code != http.StatusConflict {
			t.Errorf("POST /api/dead/retry with Host %q: %d %q, want 409 (no such dead letter)", host, code, body)
		}
	}
}

// closedWithin reads c until the server closes it or limit passes, and tells whether
// it was closed.
func closedWithin(c net.Conn, limit time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(limit))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	return err == nil || !(errors.As(err, &ne) && ne.Timeout())
}

// TestDashboardClosesSlowAndIdleConnections: a client that trickles its headers one
// byte at a time (slowloris) is cut off at the header timeout, one whose body never
// ends at the read timeout, and kept-alive connections that send nothing more are
// closed at the idle timeout. The limits are wide: the assertion is that the server
// closes them at all while the client keeps them open.
func TestDashboardClosesSlowAndIdleConnections(t *testing.T) {
	srv := streamstest.Start(t)
	d, err := dashboard.New(dashboard.Config{Client: srv.Client(), Crawl: "shop",
		ReadHeaderTimeout: 300 * time.Millisecond, ReadTimeout: time.Second, IdleTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, d)
	dial := func() net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}

	// Slowloris: a header byte every 50 ms, for up to 30 s, far past the 300 ms allowed.
	c := dial()
	trickled := make(chan error, 1)
	go func() {
		msg := "GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + strings.Repeat("a", 600)
		for i := range len(msg) {
			if _, err := c.Write([]byte{msg[i]}); err != nil {
				trickled <- err
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		trickled <- nil
	}()
	if !closedWithin(c, 30*time.Second) {
		t.Error("slowloris connection still open after 30 s (header timeout 300 ms)")
	}
	if err := <-trickled; err == nil {
		t.Error("the server let the whole 30 s of trickled headers in")
	}

	// A body announced but never sent.
	c = dial()
	if _, err := io.WriteString(c, "POST /api/dead/retry HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"ids\""); err != nil {
		t.Fatal(err)
	}
	if !closedWithin(c, 30*time.Second) {
		t.Error("connection with an unfinished body still open after 30 s (read timeout 1 s)")
	}

	// Ten kept-alive connections, each after one answered request.
	var idle []net.Conn
	for range 10 {
		c := dial()
		if _, err := io.WriteString(c, "GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || res.Close {
			t.Fatalf("keep-alive request: %d, close %v", res.StatusCode, res.Close)
		}
		idle = append(idle, c)
	}
	open := 0
	for _, c := range idle {
		if !closedWithin(c, 30*time.Second) {
			open++
		}
	}
	if open > 0 {
		t.Errorf("%d of 10 idle connections still open after 30 s (idle timeout 300 ms)", open)
	}
}

// TestDashboardCapsRequestBodies: a body above MaxBodyBytes is refused, not read.
func TestDashboardCapsRequestBodies(t *testing.T) {
	srv := streamstest.Start(t)
	d, err := dashboard.New(dashboard.Config{Client: srv.Client(), Crawl: "shop", MaxBodyBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, d)
	body := `{"ids": ["` + strings.Repeat("1", 5000) + `"]}`
	res, err := http.Post("http://"+addr+"/api/dead/retry", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusBadRequest {
		t.Errorf("5 KB body against a 1,000-byte cap: %d, want 400", res.StatusCode)
	}
}
