package browser_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/handlers/fetch/browser"
	"github.com/streamcrawl/streamcrawl/handlers/fetch/browser/browsertest"
	"github.com/streamcrawl/streamcrawl/spiders"
)

// serveOn starts h on addr (a loopback host, port 0).
func serveOn(t *testing.T, addr string, h http.Handler) *httptest.Server {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: l, Config: &http.Server{Handler: h}}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// TestPopupCannotRewriteLaterPages renders an attacker's page, whose popup navigates
// its opener to the attacker's site every 2 s, then 8 pages of another host in the same
// pool of one tab, each staying 2.5 s. Every victim page must come back as its own
// document: a popup that outlived its page navigated the reused tab while it rendered
// the victims, and all 8 were stored as the attacker's page. Every navigation is
// allowed (the attacker's site is in scope), so only the isolation of pages stops it.
// The victim is on the attacker's address, another port: another host to the crawler,
// the same site to Chromium. A victim on another address (another site) was safe
// already, as Chromium gives a cross-site page a new browsing instance, cutting the
// opener link.
func TestPopupCannotRewriteLaterPages(t *testing.T) {
	var pwned atomic.Int64
	attacker := serveOn(t, "127.0.0.2:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		switch r.URL.Path {
		case "/":
			fmt.Fprint(w, `<!doctype html><html><body><p>attacker</p><script>window.open("/popup", "p")</script></body></html>`)
		case "/popup":
			fmt.Fprint(w, `<!doctype html><html><body><script>
setInterval(() => { opener.location = location.origin + "/pwned" }, 2000);
</script></body></html>`)
		case "/pwned":
			pwned.Add(1)
			fmt.Fprint(w, `<!doctype html><html><body><p>PWNED</p></body></html>`)
		}
	}))
	victim := serveOn(t, "127.0.0.2:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html><body><p id="own">victim %s</p></body></html>`, r.URL.Path)
	}))
	p := newPool(t, browser.Config{Tabs: 1, LaunchTimeout: time.Minute})
	stay := &spiders.Page{Wait: &spiders.Wait{MS: 2500}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // the browser starts too, at a load of 10+
	res, err := p.Render(ctx, browser.Job{URL: attacker.URL + "/", Page: &spiders.Page{Wait: &spiders.Wait{MS: 500}}, Dial: browsertest.Dialer()})
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.HTML), "attacker") {
		t.Fatalf("the attacker's page did not render: %s", res.HTML)
	}
	if res.Popups != 1 {
		t.Errorf("the attacker's page opened %d popups, want 1 counted", res.Popups)
	}
	var own, taken, failed int
	for i := 0; i < 8; i++ {
		u := fmt.Sprintf("%s/v%d", victim.URL, i)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		res, err := p.Render(ctx, browser.Job{URL: u, Page: stay, Dial: browsertest.Dialer()})
		cancel()
		switch {
		case err != nil:
			failed++ // fetched again: never stored as the victim's page
			t.Logf("victim %d: %v", i, err)
		case strings.Contains(string(res.HTML), "PWNED") || res.URL != u:
			taken++
			t.Logf("victim %d stored as %s", i, res.URL)
		case strings.Contains(string(res.HTML), fmt.Sprintf("victim /v%d", i)):
			own++
		}
	}
	if own != 8 || taken != 0 {
		t.Errorf("victim pages: %d with their own content, %d as the attacker's page, %d failed; want 8, 0, 0 (%d attacker navigations reached its site)",
			own, taken, failed, pwned.Load())
	}
}
