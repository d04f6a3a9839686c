package cli

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders/demosite"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestServicesWaitForRedis: stage services started before Redis (as Docker Compose
// starts them) wait for it with --redis-wait or $REDIS_WAIT, say so once, and run once
// it answers; one whose wait runs out exits 1 naming the address and the wait; a wrong
// password is not waited for.
func TestServicesWaitForRedis(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	srv.Kill() // its port: nothing listens there until the restart below
	spider := writeFile(t, "shop.yaml", demosite.New(10).SpiderYAML("shop", "http://127.0.0.1:1/"))
	fetch := startProc(t, "fetch", nil, "fetch", spider, "--redis", srv.URL(), "--redis-wait", "2m", "--until-done")
	parse := startProc(t, "parse", []string{"REDIS_WAIT=2m"}, "parse", spider, "--redis", srv.URL(), "--until-done")
	const waiting = "waiting for redis to answer"
	for _, p := range []*proc{fetch, parse} {
		if !p.waitStderr(waiting, 60*time.Second) {
			t.Fatalf("%s did not say it waits for redis:\n%s", p.name, tail(p.Stderr(), 4<<10))
		}
	}
	srv.Restart()
	for _, p := range []*proc{fetch, parse} {
		if !p.waitStderr("stages running", 60*time.Second) {
			t.Fatalf("%s did not run once redis answered:\n%s", p.name, tail(p.Stderr(), 4<<10))
		}
		if n := strings.Count(p.Stderr(), waiting); n != 1 {
			t.Errorf("%s said %q %d times, want once", p.name, waiting, n)
		}
		if err := p.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if code, ok := p.Wait(30 * time.Second); !ok || code != 0 {
			t.Errorf("%s after SIGTERM: exit %d (exited %v), want 0", p.name, code, ok)
		}
	}

	addr := closedPort(t)
	code, _, stderr := runCLI(t, 60*time.Second, nil, "store", spider, "--redis", "redis://"+addr+"/0", "--redis-wait", "1s")
	if want := "cannot reach redis at " + addr; code != 1 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "(waited 1s: --redis-wait)") {
		t.Errorf("store with nothing at %s for 1s: exit %d, stderr %q; want exit 1, %q and the wait", addr, code, stderr, want)
	}

	if err := srv.Client().ConfigSet(context.Background(), "requirepass", "s3cret").Err(); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runCLI(t, 60*time.Second, nil, "fetch", spider, "--redis", "redis://:wrong@"+srv.Addr+"/0", "--redis-wait", "10m")
	if code != 1 || !strings.Contains(stderr, "refused the user or password") || strings.Contains(stderr, waiting) {
		t.Errorf("fetch with a wrong password: exit %d, stderr %q; want exit 1 at once, no wait", code, stderr)
	}
}
