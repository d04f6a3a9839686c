package cli

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestDashboardOpensOnTheFleet: `dashboard` without --crawl, with crawls registered,
// serves the fleet page listing them, pauses one through the page's API (the registry
// then says so, as `crawls` reads it) and serves every registered crawl's state on
// /metrics.
func TestDashboardOpensOnTheFleet(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	url := srv.URL()
	for _, name := range []string{"alpha", "beta"} {
		fleetCLI(t, "submitted crawl "+name+" version 1 (queued)", "submit", fleetSpider(t, name), "--redis", url)
	}
	dash := startProc(t, "dashboard-fleet", nil, "dashboard", "--redis", url, "--addr", "127.0.0.1:0")
	if !dash.waitStderr(`"url"`, 60*time.Second) {
		t.Fatalf("dashboard logged no url:\n%s", dash.Stderr())
	}
	if !strings.Contains(dash.Stderr(), "showing the fleet's crawls") {
		t.Errorf("dashboard without --crawl did not say it shows the fleet:\n%s", dash.Stderr())
	}
	ui := dashboardURLRE.FindStringSubmatch(dash.Stderr())[1]
	deadline := time.Now().Add(time.Minute)
	for {
		code, page := httpGet(t, ui)
		if code == http.StatusOK && strings.Contains(page, `data-crawl="alpha"`) && strings.Contains(page, `data-crawl="beta"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %d, want the fleet page with alpha and beta:\n%s", ui, code, page)
		}
		time.Sleep(100 * time.Millisecond)
	}
	res, err := http.Post(ui+"api/crawls/alpha/pause", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Errorf("pause alpha through the dashboard: %d %q", res.StatusCode, b)
	}
	wantStates(t, url, "pause through the dashboard", "alpha=paused v1", "beta=queued v1")
	code, body := httpGet(t, ui+"metrics")
	for _, want := range []string{`streamcrawl_crawl_state{crawl="alpha",state="paused"} 1`, `streamcrawl_crawl_state{crawl="beta",state="queued"} 1`} {
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("dashboard /metrics: %d, want %s", code, want)
		}
	}
}
