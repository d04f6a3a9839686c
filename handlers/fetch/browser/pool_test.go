package browser_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/handlers/fetch/browser"
	"github.com/streamcrawl/streamcrawl/handlers/fetch/browser/browsertest"
	"github.com/streamcrawl/streamcrawl/spiders"
)

// site is a small JavaScript site: what it serves, and what it was asked for.
type site struct {
	*httptest.Server
	mu   sync.Mutex
	hits map[string]int
	// hold, when set, is waited on by /slow.
	hold chan struct{}
}

func (s *site) count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

func newSite(t *testing.T, forbidden string) *site {
	s := &site{hits: map[string]int{}, hold: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		switch r.URL.Path {
		case "/app":
			fmt.Fprintf(w, `<!doctype html><html><head><title>app</title></head><body><div id="app"></div>
<img src="/pixel.png"><script>
fetch("/api/items").then(r => r.json()).then(items => {
  document.getElementById("app").innerHTML = items.map(i => '<p class="item">' + i + '</p>').join("");
});
fetch("http://%s/secret").catch(() => {});
fetch("http://169.254.169.254/latest/meta-data/").catch(() => {});
</script></body></html>`, forbidden)
		case "/api/items":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `["one","two","three"]`)
		case "/scroll":
			fmt.Fprint(w, `<!doctype html><html><body><ul id="list"></ul><button id="more">more</button>
<input id="q"><p id="echo"></p><script>
let page = 0;
function load() {
  if (page >= 4) return;
  page++;
  fetch("/api/page?n=" + page).then(r => r.text()).then(t => {
    const ul = document.getElementById("list");
    for (let i = 0; i < 20; i++) { const li = document.createElement("li"); li.textContent = t + "-" + i; li.style.height = "80px"; ul.appendChild(li); }
  });
}
load();
window.addEventListener("scroll", () => { if (window.innerHeight + window.scrollY >= document.body.scrollHeight - 10) load(); });
document.getElementById("more").addEventListener("click", () => {
  fetch("/api/page?n=clicked").then(r => r.text()).then(t => { const p = document.createElement("p"); p.id = "clicked"; p.textContent = t; document.body.appendChild(p); });
});
document.getElementById("q").addEventListener("input", e => { document.getElementById("echo").textContent = "typed:" + e.target.value; });
</script></body></html>`)
		case "/api/page":
			fmt.Fprint(w, "page"+r.URL.Query().Get("n"))
		case "/cookies":
			w.Header().Add("Set-Cookie", "server=set; Path=/")
			c, _ := r.Cookie("given")
			v := ""
			if c != nil {
				v = c.Value
			}
			fmt.Fprintf(w, `<html><body><p id="given">%s</p><script>document.cookie = "script=ran; path=/";</script></body></html>`, v)
		case "/redirect":
			http.Redirect(w, r, "/out", http.StatusFound)
		case "/jsredirect":
			fmt.Fprint(w, `<html><body><p>before</p><script>setTimeout(() => location.replace("/landed"), 10)</script></body></html>`)
		case "/jsout":
			fmt.Fprint(w, `<html><body><p id="stay">stayed</p><script>setTimeout(() => location.replace("/out"), 10)</script></body></html>`)
		case "/landed":
			w.Header().Set("X-Landed", "yes")
			fmt.Fprint(w, `<html><body><p id="landed">landed</p></body></html>`)
		case "/slow":
			select {
			case <-s.hold:
			case <-r.Context().Done():
			}
			fmt.Fprint(w, `<html><body>slow</body></html>`)
		case "/missing":
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `<html><body>gone</body></html>`)
		default:
			fmt.Fprint(w, `<html><body><p>plain</p></body></html>`)
		}
	}))
	t.Cleanup(s.Server.Close)
	return s
}

// newPool returns a pool of cfg (Dial and ExecPath filled in) closed at the end of
// the test, which then checks that no Chromium process is left.
func newPool(t *testing.T, cfg browser.Config) *browser.Pool {
	t.Helper()
	if cfg.ExecPath == "" {
		cfg.ExecPath = browsertest.Chromium(t)
	}
	if cfg.Dial == nil {
		cfg.Dial = browsertest.Dialer()
	}
	p, err := browser.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := p.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
		if left := browsertest.Processes(); len(left) > 0 {
			t.Errorf("chromium processes left after Close: %v", left)
		}
	})
	return p
}

func render(t *testing.T, p *browser.Pool, job browser.Job) *browser.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := p.Render(ctx, job)
	if err != nil {
		t.Fatalf("render %s: %v", job.URL, err)
	}
	return res
}

// TestRenderRunsScriptsThroughTheGuard renders a page whose content comes from a
// JSON call after load, and whose script also fetches a forbidden loopback address
// and the cloud metadata address: the DOM has the items, the forbidden server was
// never asked, both were counted blocked, and the image (blocked by default) was
// never requested.
func TestRenderRunsScriptsThroughTheGuard(t *testing.T) {
	var forbiddenHits atomic.Int64
	forbidden := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { forbiddenHits.Add(1) }))
	defer forbidden.Close()
	fu, _ := url.Parse(forbidden.URL)
	s := newSite(t, fu.Host)
	p := newPool(t, browser.Config{Dial: browsertest.Dialer(fu.Host)})
	res := render(t, p, browser.Job{URL: s.URL + "/app", Dial: browsertest.Dialer(fu.Host)})
	for _, want := range []string{`<p class="item">one</p>`, `<p class="item">three</p>`, `<!DOCTYPE html>`} {
		if !strings.Contains(string(res.HTML), want) {
			t.Errorf("rendered DOM lacks %s:\n%s", want, res.HTML)
		}
	}
	if res.Status != 200 || res.Headers.Get("Content-Type") != "text/html; charset=utf-8" || res.URL != s.URL+"/app" {
		t.Errorf("status %d, content type %q, url %s", res.Status, res.Headers.Get("Content-Type"), res.URL)
	}
	if n := forbiddenHits.Load(); n != 0 {
		t.Errorf("the forbidden server was asked %d times", n)
	}
	if res.Traffic.Blocked < 2 {
		t.Errorf("blocked %d connections (%v), want the forbidden one and the metadata address", res.Traffic.Blocked, res.Traffic.BlockedHosts)
	}
	if n := s.count("/pixel.png"); n != 0 || res.BlockedKinds < 1 {
		t.Errorf("image requested %d times, %d blocked by kind", n, res.BlockedKinds)
	}
	if !strings.HasPrefix(res.Browser, "HeadlessChrome/") && !strings.Contains(res.Browser, "Chrom") {
		t.Errorf("browser %q", res.Browser)
	}
}

// TestRenderWaitsAndActs scrolls an infinite list until it stops growing, clicks a
// button whose handler loads more, and fills a field.
func TestRenderWaitsAndActs(t *testing.T) {
	s := newSite(t, "127.0.0.1:1")
	p := newPool(t, browser.Config{})
	pg := &spiders.Page{Wait: &spiders.Wait{Selector: "#list li"}, Actions: []spiders.Action{
		{Scroll: &spiders.Scroll{UntilIdle: true}}, {Click: "#more"}, {Fill: &spiders.Fill{Selector: "#q", Value: "hello"}}}}
	res := render(t, p, browser.Job{URL: s.URL + "/scroll", Page: pg, Dial: browsertest.Dialer()})
	html := string(res.HTML)
	for _, want := range []string{"page1-0", "page4-19", `<p id="clicked">pageclicked</p>`, "typed:hello"} {
		if !strings.Contains(html, want) {
			t.Errorf("DOM lacks %q", want)
		}
	}
	if n := s.count("/api/page"); n != 5 {
		t.Errorf("%d page calls, want 4 scrolls' worth and 1 click", n)
	}
	// Without the actions only the first batch is there.
	res = render(t, p, browser.Job{URL: s.URL + "/scroll", Dial: browsertest.Dialer()})
	if html := string(res.HTML); !strings.Contains(html, "page1-19") || strings.Contains(html, "page2-0") {
		t.Errorf("without scrolling: want the first batch only")
	}
}

// TestRenderCookies sets a cookie before the page loads and reads back the ones the
// server and the page's script set.
func TestRenderCookies(t *testing.T) {
	s := newSite(t, "127.0.0.1:1")
	p := newPool(t, browser.Config{})
	from, _ := url.Parse(s.URL + "/")
	res := render(t, p, browser.Job{URL: s.URL + "/cookies", Dial: browsertest.Dialer(),
		Cookies: []browser.Cookie{{From: from, Cookie: &http.Cookie{Name: "given", Value: "v1", Path: "/"}}}})
	if !strings.Contains(string(res.HTML), `<p id="given">v1</p>`) {
		t.Errorf("the server did not get the cookie set before the load")
	}
	got := map[string]string{}
	for _, c := range res.Cookies {
		got[c.Name] = c.Value + "@" + c.From.Host
	}
	host := from.Host
	for name, want := range map[string]string{"given": "v1@", "server": "set@", "script": "ran@"} {
		if got[name] != want+strings.Split(host, ":")[0] && got[name] != want+host {
			t.Errorf("cookie %s = %q, want %s%s", name, got[name], want, host)
		}
	}
}

// TestRenderAsksBeforeEachNavigation refuses a redirect (the page is refused), a
// script's navigation elsewhere (the page stays), and lets a script's navigation
// within scope land (its status and headers are the response's).
func TestRenderAsksBeforeEachNavigation(t *testing.T) {
	s := newSite(t, "127.0.0.1:1")
	p := newPool(t, browser.Config{})
	var asked []string
	var mu sync.Mutex
	navigate := func(_ context.Context, u *url.URL, first bool) error {
		mu.Lock()
		asked = append(asked, fmt.Sprintf("%s %v", u.Path, first))
		mu.Unlock()
		if u.Path == "/out" {
			return errors.New("out of scope")
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := p.Render(ctx, browser.Job{URL: s.URL + "/redirect", Dial: browsertest.Dialer(), Navigate: navigate})
	var refused *browser.RefusedError
	if !errors.As(err, &refused) || !strings.HasSuffix(refused.URL, "/out") {
		t.Fatalf("redirect out of scope: %v, want a RefusedError for /out", err)
	}
	if n := s.count("/out"); n != 0 {
		t.Errorf("/out was requested %d times", n)
	}
	res := render(t, p, browser.Job{URL: s.URL + "/jsout", Dial: browsertest.Dialer(), Navigate: navigate,
		Page: &spiders.Page{Wait: &spiders.Wait{NetworkIdle: true, MS: 200}}})
	if !strings.Contains(string(res.HTML), "stayed") || res.Refused != 1 || s.count("/out") != 0 {
		t.Errorf("script navigation out of scope: refused %d, DOM %s", res.Refused, res.HTML)
	}
	res = render(t, p, browser.Job{URL: s.URL + "/jsredirect", Dial: browsertest.Dialer(), Navigate: navigate,
		Page: &spiders.Page{Wait: &spiders.Wait{Selector: "#landed"}}})
	if res.URL != s.URL+"/landed" || res.Headers.Get("X-Landed") != "yes" || !strings.Contains(string(res.HTML), "landed") {
		t.Errorf("script navigation: url %s, headers %v", res.URL, res.Headers)
	}
	res = render(t, p, browser.Job{URL: s.URL + "/missing", Dial: browsertest.Dialer(), Navigate: navigate})
	if res.Status != 404 {
		t.Errorf("status %d, want the document's 404", res.Status)
	}
	mu.Lock()
	defer mu.Unlock()
	want := "/redirect true,/out false,/jsout true,/out false,/jsredirect true,/landed false,/missing true"
	if got := strings.Join(asked, ","); got != want {
		t.Errorf("asked\n %s\nwant\n %s", got, want)
	}
}

// TestPoolRetiresAfterPages renders 7 pages with browsers retired after 3: three
// browsers start, two retire, never more than one runs (a retiring browser finishes
// and closes before its replacement starts), nothing is left after Close.
func TestPoolRetiresAfterPages(t *testing.T) {
	s := newSite(t, "127.0.0.1:1")
	p := newPool(t, browser.Config{RetireAfter: 3, Tabs: 2})
	var most atomic.Int64
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			if n := int64(p.Stats().Live); n > most.Load() {
				most.Store(n)
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	for i := 0; i < 7; i++ {
		render(t, p, browser.Job{URL: s.URL + "/plain", Dial: browsertest.Dialer(), Page: &spiders.Page{Wait: &spiders.Wait{}}})
	}
	close(stop)
	<-watched
	if n := most.Load(); n != 1 {
		t.Errorf("%d browsers ran at once, want 1", n)
	}
	waitFor(t, func() bool { return p.Stats().Live == 1 })
	st := p.Stats()
	if st.Launches != 3 || st.RetiredPages != 2 || st.Pages != 7 || st.Crashes != 0 {
		t.Errorf("stats %+v, want 3 launches, 2 retired after their pages, 7 pages, no crash", st)
	}
}

// TestPoolRetiresAboveMemory and after idling: a ceiling below any browser's memory
// retires the browser once it is measured; an idle one is closed.
func TestPoolRetiresAboveMemoryAndIdle(t *testing.T) {
	s := newSite(t, "127.0.0.1:1")
	p := newPool(t, browser.Config{MaxMemory: 1, SampleInterval: 50 * time.Millisecond})
	render(t, p, browser.Job{URL: s.URL + "/plain", Dial: browsertest.Dialer()})
	waitFor(t, func() bool { return p.Stats().RetiredMemory == 1 && p.Stats().Live == 0 })
	q := newPool(t, browser.Config{IdleTimeout: 100 * time.Millisecond, SampleInterval: 50 * time.Millisecond})
	render(t, q, browser.Job{URL: s.URL + "/plain", Dial: browsertest.Dialer()})
	waitFor(t, func() bool { return q.Stats().RetiredIdle == 1 && q.Stats().Live == 0 })
	if st := q.Stats(); st.RetiredMemory != 0 {
		t.Errorf("idle pool: %+v", st)
	}
}

// TestBrowserKilledMidPage kills the browser (SIGKILL) while it waits for a page: the
// page fails with ErrBrowserLost, the crash is counted, the next page starts a new
// browser, and no process is left (the killed browser's orphans are reaped).
func TestBrowserKilledMidPage(t *testing.T) {
	s := newSite(t, "127.0.0.1:1")
	p := newPool(t, browser.Config{})
	render(t, p, browser.Job{URL: s.URL + "/plain", Dial: browsertest.Dialer()})
	pids := browser.PIDs(p)
	if len(pids) != 1 {
		t.Fatalf("pids %v", pids)
	}
	errc := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_, err := p.Render(ctx, browser.Job{URL: s.URL + "/slow", Dial: browsertest.Dialer()})
		errc <- err
	}()
	waitFor(t, func() bool { return s.count("/slow") == 1 })
	if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, browser.ErrBrowserLost) {
		t.Fatalf("render during the kill: %v, want ErrBrowserLost", err)
	}
	close(s.hold)
	res := render(t, p, browser.Job{URL: s.URL + "/plain", Dial: browsertest.Dialer()})
	if !strings.Contains(string(res.HTML), "plain") {
		t.Errorf("after the crash: %s", res.HTML)
	}
	st := p.Stats()
	if st.Crashes != 1 || st.Launches != 2 || st.PagesLost != 1 {
		t.Errorf("stats %+v, want 1 crash, 2 launches, 1 page lost", st)
	}
}

// TestLaunchTimeout gives up on a browser that never answers, within LaunchTimeout.
func TestLaunchTimeout(t *testing.T) {
	browsertest.Chromium(t)
	stuck := filepath.Join(t.TempDir(), "stuck-browser")
	if err := os.WriteFile(stuck, []byte("#!/bin/sh\nexec sleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := newPool(t, browser.Config{ExecPath: stuck, LaunchTimeout: 500 * time.Millisecond})
	start := time.Now()
	_, err := p.Render(context.Background(), browser.Job{URL: "http://127.0.0.1:1/", Dial: browsertest.Dialer()})
	if err == nil || !strings.Contains(err.Error(), "no answer within 500ms") {
		t.Fatalf("render with a stuck browser: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("gave up after %s", d)
	}
	if st := p.Stats(); st.LaunchFailures != 1 || st.Launches != 0 {
		t.Errorf("stats %+v", st)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 15s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRemoteBrowser renders through a browser this process did not start (as with
// --browser-url and a browserless container): the page's requests still go through
// the page proxy and its guard, and closing the pool leaves the browser running.
func TestRemoteBrowser(t *testing.T) {
	exe := browsertest.Chromium(t)
	cmd := exec.Command(exe, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-port=0",
		"--remote-debugging-address=127.0.0.1", "--user-data-dir="+t.TempDir(), "about:blank")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		// The whole browser, then its orphans: this process adopts them when a pool
		// made it a subreaper.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) //nolint:errcheck // test
		cmd.Wait()                                      //nolint:errcheck // test
		waitFor(t, func() bool { browser.ReapOrphans(); return len(browsertest.Processes()) == 0 })
	}()
	ws := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if _, u, ok := strings.Cut(sc.Text(), "DevTools listening on "); ok {
				ws <- u
			}
		}
	}()
	var url string
	select {
	case url = <-ws:
	case <-time.After(15 * time.Second):
		t.Fatal("the remote browser did not start")
	}
	s := newSite(t, "127.0.0.1:1")
	p, err := browser.New(context.Background(), browser.Config{URL: url, Dial: browsertest.Dialer()})
	if err != nil {
		t.Fatal(err)
	}
	res := render(t, p, browser.Job{URL: s.URL + "/app", Dial: browsertest.Dialer()})
	if !strings.Contains(string(res.HTML), `<p class="item">two</p>`) || res.Traffic.Blocked != 1 ||
		res.Traffic.BlockedHosts[0] != "169.254.169.254:80" { // 127.0.0.1:1 Chromium refuses itself (an unsafe port)
		t.Errorf("remote render: traffic %+v, DOM %s", res.Traffic, res.HTML)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the remote browser is gone after Close: %v", err)
	}
}
