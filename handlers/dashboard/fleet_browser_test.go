package dashboard_test

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/streamcrawl/streamcrawl/handlers/dashboard"
	"github.com/streamcrawl/streamcrawl/handlers/fleet"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestFleetPageInChromium: headless Chromium shows the fleet page with its script
// running: a crawl submitted after the page loaded appears in the table, the pause
// button of a running crawl pauses it in the registry and the row then offers resume,
// whose click makes it running again; the crawl's name links to its own page, which
// loads its figures through its relative API paths. The test saves a screenshot.
func TestFleetPageInChromium(t *testing.T) {
	exe := chromium(t)
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	reg := fleet.New(rdb)
	submit := func(name string) {
		t.Helper()
		if _, err := reg.Submit(ctx, fleet.Submission{Name: name, Spider: []byte("name: " + name + "\nstart_urls: [http://127.0.0.1:1/]\n")}); err != nil {
			t.Fatal(err)
		}
	}
	submit("alpha")
	submit("beta")
	if _, err := reg.Transition(ctx, "alpha", []fleet.State{fleet.Queued}, fleet.Running, ""); err != nil {
		t.Fatal(err)
	}
	d, err := dashboard.New(dashboard.Config{Client: rdb, Interval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	go d.Run(ctx)
	ui := httptest.NewServer(d.Handler())
	defer ui.Close()

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.WindowSize(1200, 600))
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	if err := chromedp.Do(bctx, chromedp.Navigate(ui.URL)); err != nil {
		t.Fatalf("load the fleet page: %v", err)
	}
	rows := `document.querySelectorAll("#crawls tbody tr").length`
	waitJS(t, bctx, rows, func(v float64) bool { return v == 2 })
	submit("gamma")
	waitJS(t, bctx, rows, func(v float64) bool { return v == 3 })

	// The button is found and clicked by one script: the table is redrawn every second.
	button := func(name, action string) string {
		return `(() => { const b = document.querySelector('#crawls tr[data-crawl="` + name + `"] button[data-action="` + action + `"]'); ` +
			`if (!b) return 0; b.click(); return 1; })()`
	}
	state := func(name string) fleet.State {
		c, err := reg.Get(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return c.State
	}
	waitJS(t, bctx, button("alpha", "pause"), func(v float64) bool { return v == 1 })
	for deadline := time.Now().Add(time.Minute); state("alpha") != fleet.Paused && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	if s := state("alpha"); s != fleet.Paused {
		t.Fatalf("alpha after its pause button: %s, want paused", s)
	}
	waitJS(t, bctx, button("alpha", "resume"), func(v float64) bool { return v == 1 })
	for deadline := time.Now().Add(time.Minute); state("alpha") != fleet.Running && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	if s := state("alpha"); s != fleet.Running {
		t.Errorf("alpha after its resume button: %s, want running", s)
	}
	waitJS(t, bctx, `document.querySelector('#crawls tr[data-crawl="alpha"] .badge').textContent === "running" ? 1 : 0`,
		func(v float64) bool { return v == 1 })
	step, scancel := context.WithTimeout(bctx, time.Minute)
	defer scancel()
	png, err := chromedp.Run(step, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	shot := filepath.Join(artifactDir(t), "dashboard-fleet.png")
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot (%d bytes): %s", len(png), shot)

	// One click to the crawl's own page, whose script reads its API under /crawls/beta/.
	// The click is followed by a wait for the crawl page's chart: a script evaluated while
	// the browser navigates can run in either page.
	waitJS(t, bctx, `(() => { document.querySelector('#crawls tr[data-crawl="beta"] a').click(); return 1; })()`, func(v float64) bool { return v == 1 })
	nav, ncancel := context.WithTimeout(bctx, time.Minute)
	defer ncancel()
	if err := chromedp.Do(nav, chromedp.WaitVisible(chromedp.CSS("#chart-rates"))); err != nil {
		t.Fatalf("the crawl's page after the click: %v", err)
	}
	waitJS(t, bctx, `location.pathname === "/crawls/beta/" && (document.getElementById("crawl") || {}).textContent === "beta" && `+
		`(document.getElementById("error") || {}).textContent === "" ? 1 : 0`, func(v float64) bool { return v == 1 })
}
