package dashboard_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/handlers/dashboard"
	"github.com/streamcrawl/streamcrawl/processors"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/spiders/demosite"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// chromium returns the path of a Chromium or Chrome binary. Without one the test fails
// in CI (CI set) and is skipped elsewhere.
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no chromium in PATH: .ci/run installs Debian's chromium package")
	}
	t.Skip("no chromium in PATH (apt-get install chromium); CI fails instead of skipping")
	return ""
}

// slowSite answers after a delay, so that the crawl runs long enough to watch.
type slowSite struct {
	*demosite.Site
	delay time.Duration
}

func (s slowSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	time.Sleep(s.delay)
	s.Site.ServeHTTP(w, r)
}

// artifactDir is where the test keeps its screenshot: $STREAMCRAWL_ARTIFACTS, or a
// directory under the system temp dir that outlives the test.
func artifactDir(t *testing.T) string {
	dir := os.Getenv("STREAMCRAWL_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "streamcrawl-artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestDashboardInChromium crawls the demo shop in this process while headless Chromium
// shows the dashboard: the page loads, its live page rate goes above zero, and the retry
// button of a dead letter re-queues it (the site is asked for that URL again). The test
// saves a screenshot; UPDATE_DOCS=1 also writes it to docs/dashboard.png.
func TestDashboardInChromium(t *testing.T) {
	exe := chromium(t)
	srv := streamstest.Start(t)
	rdb := srv.Client()
	site := demosite.New(1500)
	web := httptest.NewServer(slowSite{site, 15 * time.Millisecond})
	defer web.Close()
	sp, _, err := spiders.Parse("shop.yaml", []byte(site.SpiderYAML("shop", web.URL+"/")))
	if err != nil {
		t.Fatal(err)
	}
	sp.Settings.MaxRetries = new(1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sink, err := processors.OpenJSONL(filepath.Join(t.TempDir(), "items.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := handlers.Seed(ctx, rdb, sp, nil); err != nil {
		t.Fatal(err)
	}
	crawlDone := make(chan error, 1)
	go func() {
		_, err := handlers.Crawl(ctx, sp, handlers.Options{Client: &streams.Client{UniversalClient: rdb}, Sink: sink,
			NoSeed: true, Serve: true, RetryBase: 20 * time.Millisecond})
		crawlDone <- err
	}()
	defer func() {
		cancel()
		if err := <-crawlDone; err != nil {
			t.Errorf("crawl: %v", err)
		}
	}()

	d, err := dashboard.New(dashboard.Config{Client: rdb, Crawl: sp.Name, Interval: 250 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	go d.Run(ctx)
	ui := httptest.NewServer(d.Handler())
	defer ui.Close()

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.WindowSize(1400, 1000))
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	// The first call starts the browser and must not have a deadline; later ones do.
	if err := chromedp.Do(bctx, chromedp.Navigate(ui.URL)); err != nil {
		t.Fatalf("load the dashboard: %v", err)
	}
	step := func() context.Context {
		c, cancel := context.WithTimeout(bctx, time.Minute)
		t.Cleanup(cancel)
		return c
	}
	if err := chromedp.Do(step(), chromedp.WaitVisible(chromedp.CSS("#pages-rate"))); err != nil {
		t.Fatalf("load the dashboard: %v", err)
	}
	// The live rate goes above zero while the crawl runs.
	var rate float64
	waitJS(t, bctx, `parseFloat(document.getElementById("pages-rate").textContent.replace(/,/g, ""))`, func(v float64) bool { rate = v; return v > 0 })
	t.Logf("page rate shown: %.1f pages/s", rate)
	// Dead letters appear (the shop's always-500 pages), each with a retry button.
	waitJS(t, bctx, `document.querySelectorAll("#deadletters button.retry").length`, func(v float64) bool { return v > 0 })
	png, err := chromedp.Run(step(), chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	shot := filepath.Join(artifactDir(t), "dashboard.png")
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot (%d bytes): %s", len(png), shot)
	if os.Getenv("UPDATE_DOCS") == "1" {
		if err := os.WriteFile("../../docs/dashboard.png", png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Retry the first dead letter from the page: the site is asked for its URL again. The
	// row is read and its button clicked by one script: the page redraws the table every
	// 5 s, and a node looked up before a redraw is gone by the time it is clicked
	// ("No node with given id found").
	before := site.Requests()
	// The clicked button is kept in window.retried: the page redraws the table a second
	// after the answer, and a wait for the button in the table can miss that second on
	// a loaded machine; the clicked node keeps its label after it leaves the table.
	deadURL, err := chromedp.Run(step(), chromedp.Evaluate[string](`(() => {
		const row = document.querySelector("#deadletters tbody tr:first-child");
		window.retried = row.querySelector("button.retry");
		window.retried.click();
		return row.querySelector("td.url").textContent;
	})()`))
	if err != nil {
		t.Fatalf("retry from the page: %v", err)
	}
	u, err := url.Parse(deadURL)
	if err != nil || u.Path == "" {
		t.Fatalf("dead letter URL %q: %v", deadURL, err)
	}
	waitJS(t, bctx, `window.retried.disabled && window.retried.textContent !== "retry" ? 1 : 0`, func(v float64) bool { return v == 1 })
	label, err := chromedp.Run(step(), chromedp.Evaluate[string](`window.retried.textContent`))
	if err != nil {
		t.Fatal(err)
	}
	if label != "re-queued" {
		t.Errorf("retry button says %q, want re-queued", label)
	}
	deadline := time.Now().Add(time.Minute)
	for site.Requests()[u.Path] <= before[u.Path] && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if after := site.Requests()[u.Path]; after <= before[u.Path] {
		t.Errorf("%s requested %d times before the retry and %d after, want more", u.Path, before[u.Path], after)
	} else {
		t.Logf("%s requested %d times before the retry, %d after", u.Path, before[u.Path], after)
	}
}

// waitJS evaluates expr in the page every 100 ms until ok says so (or a minute passes).
func waitJS(t *testing.T, ctx context.Context, expr string, ok func(float64) bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	var last float64
	for time.Now().Before(deadline) {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[float64](expr))
		if err != nil {
			t.Fatalf("evaluate %s: %v", expr, err)
		}
		if ok(v) {
			return
		}
		last = v
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s stayed %s for a minute", expr, strconv.FormatFloat(last, 'f', -1, 64))
}
