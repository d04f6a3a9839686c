package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders/demosite"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestCLIPapercuts covers what a new user trips over: the spider given either way, a
// missing --crawl, the status of a crawl that does not exist.
func TestCLIPapercuts(t *testing.T) {
	t.Parallel()
	bad := writeFile(t, "bad.yaml", "name: shop\nstart_urls: [http://127.0.0.1:1/]\nsettings:\n  concurency: 3\n")
	wantBad := bad + `:4: settings: unknown key "concurency"`

	t.Run("spider as argument or --spider everywhere", func(t *testing.T) {
		t.Parallel()
		for _, args := range [][]string{
			{"crawl", bad}, {"crawl", "--spider", bad},
			{"seed", bad, "--redis", "redis://127.0.0.1:1/0"}, {"seed", "--redis", "redis://127.0.0.1:1/0", "--spider", bad},
			{"fetch", bad, "--redis", "redis://127.0.0.1:1/0"}, {"parse", "--spider", bad, "--redis", "redis://127.0.0.1:1/0"},
			{"store", bad, "--redis", "redis://127.0.0.1:1/0"},
		} {
			code, _, stderr := runInProcess(args...)
			if code != 1 || !strings.Contains(stderr, wantBad) {
				t.Errorf("%v: exit %d, stderr %q; want exit 1 and %q (the spider was read)", args, code, stderr, wantBad)
			}
		}
		for _, args := range [][]string{{"crawl"}, {"fetch", "--redis", "redis://127.0.0.1:1/0"}, {"seed", "--redis", "redis://127.0.0.1:1/0"}} {
			code, _, stderr := runInProcess(args...)
			if code != 1 || !strings.Contains(stderr, "no spider: pass SPIDER.yaml as an argument or --spider SPIDER.yaml") {
				t.Errorf("%v: exit %d, stderr %q; want exit 1 and how to give the spider", args, code, stderr)
			}
		}
		code, _, stderr := runInProcess("crawl", bad, "--spider", bad)
		if code != 1 || !strings.Contains(stderr, "unexpected argument") {
			t.Errorf("crawl with the spider twice: exit %d, stderr %q", code, stderr)
		}
	})

	t.Run("missing --crawl says so", func(t *testing.T) {
		t.Parallel()
		// Not exporter: without --crawl it serves every crawl of the fleet's registry
		// (TestExporterFollowsTheFleet).
		for _, args := range [][]string{
			{"status"}, {"reset"}, {"dead", "list"}, {"groups", "list"},
			{"process", "--group", "g"}, {"replay", "--stage", "parse", "--from", "0"},
		} {
			code, _, stderr := runInProcess(append(args, "--redis", "redis://127.0.0.1:1/0")...)
			if code != 1 || !strings.Contains(stderr, "--crawl is required") {
				t.Errorf("%v without --crawl: exit %d, stderr %q; want exit 1 and \"--crawl is required\"", args, code, stderr)
			}
		}
	})

	t.Run("status of a crawl that does not exist", func(t *testing.T) {
		t.Parallel()
		srv := streamstest.Start(t)
		code, stdout, stderr := runCLI(t, 30*time.Second, nil, "status", "--redis", srv.URL(), "--crawl", "nosuch")
		if code != 1 || !strings.Contains(stderr, `no crawl "nosuch" in Redis at `+srv.Addr) || stdout != "" {
			t.Errorf("status of a missing crawl: exit %d, stdout %q, stderr %q; want exit 1 saying so", code, stdout, stderr)
		}
		// Once seeded, it exists.
		spider := writeFile(t, "shop.yaml", demosite.New(10).SpiderYAML("nosuch", "http://127.0.0.1:1/"))
		if code, _, stderr := runCLI(t, 30*time.Second, nil, "seed", spider, "--redis", srv.URL()); code != 0 {
			t.Fatalf("seed: exit %d: %s", code, stderr)
		}
		code, stdout, stderr = runCLI(t, 30*time.Second, nil, "status", "--redis", srv.URL(), "--crawl", "nosuch")
		if code != 0 || !strings.Contains(stdout, "frontier") {
			t.Errorf("status of a seeded crawl: exit %d, stdout %q, stderr %q", code, stdout, stderr)
		}
	})

	t.Run("dashboard without --crawl finds the crawls", func(t *testing.T) {
		t.Parallel()
		srv := streamstest.Start(t)
		code, _, stderr := runCLI(t, 30*time.Second, nil, "dashboard", "--redis", srv.URL(), "--addr", "127.0.0.1:0")
		if code != 1 || !strings.Contains(stderr, "no crawl in Redis at "+srv.Addr) {
			t.Errorf("dashboard on an empty Redis: exit %d, stderr %q; want exit 1 saying so", code, stderr)
		}
		seed := func(name string) {
			spider := writeFile(t, name+".yaml", demosite.New(10).SpiderYAML(name, "http://127.0.0.1:1/"))
			if code, _, stderr := runCLI(t, 30*time.Second, nil, "seed", spider, "--redis", srv.URL()); code != 0 {
				t.Fatalf("seed %s: exit %d: %s", name, code, stderr)
			}
		}
		seed("books")
		p := startProc(t, "dashboard-only-crawl", nil, "dashboard", "--redis", srv.URL(), "--addr", "127.0.0.1:0")
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(p.Stderr(), "showing the only crawl in Redis") && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		p.Kill()
		if got := p.Stderr(); !strings.Contains(got, "showing the only crawl in Redis") || !strings.Contains(got, "books") {
			t.Errorf("dashboard with one crawl in Redis did not show it:\n%s", got)
		}
		seed("shop")
		code, _, stderr = runCLI(t, 30*time.Second, nil, "dashboard", "--redis", srv.URL(), "--addr", "127.0.0.1:0")
		if code != 1 || !strings.Contains(stderr, "2 crawls in Redis at "+srv.Addr+" (books, shop): name one with --crawl") {
			t.Errorf("dashboard with two crawls, no terminal: exit %d, stderr %q; want exit 1 naming both", code, stderr)
		}
	})
}
