package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders/demosite"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestDashboardWarnsWhenReachable: bound to every address, the dashboard warns that it has
// no authentication and says how to put it behind a proxy; bound to loopback, it does not.
func TestDashboardWarnsWhenReachable(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	spider := writeFile(t, "shop.yaml", demosite.New(10).SpiderYAML("shop", "http://127.0.0.1:1/"))
	if code, _, stderr := runCLI(t, 30*time.Second, nil, "seed", spider, "--redis", srv.URL()); code != 0 {
		t.Fatalf("seed: exit %d: %s", code, stderr)
	}
	const warning = "has no authentication"
	for _, c := range []struct {
		addr string
		warn bool
	}{{"0.0.0.0:0", true}, {"127.0.0.1:0", false}} {
		p := startProc(t, "dashboard-"+c.addr, nil, "dashboard", "--redis", srv.URL(), "--crawl", "shop", "--addr", c.addr)
		if !p.waitStderr(`"url"`, 30*time.Second) {
			p.Kill()
			t.Fatalf("dashboard --addr %s logged no url:\n%s", c.addr, p.Stderr())
		}
		p.Kill()
		got := p.Stderr()
		if strings.Contains(got, warning) != c.warn {
			t.Errorf("dashboard --addr %s: warning %q logged %v, want %v:\n%s", c.addr, warning, !c.warn, c.warn, got)
		}
		if c.warn && !strings.Contains(got, "reverse proxy") {
			t.Errorf("dashboard --addr %s: the warning does not say how to put it behind a proxy:\n%s", c.addr, got)
		}
	}
}
