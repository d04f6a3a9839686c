package fetch

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestRobotsFirstFetchLocksWithTheKeyItself: while one process fetches a host's
// robots.txt, another waits (robotsWait) instead of fetching it too, and then reads
// the stored answer; a lock left by a fetcher that died expires and the file is
// fetched again. The lock is the robots.txt key (no lock key of its own).
func TestRobotsFirstFetchLocksWithTheKeyItself(t *testing.T) {
	var fetches atomic.Int32
	release := make(chan struct{})
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		<-release
		_, _ = w.Write([]byte("User-agent: *\nDisallow: /private/\n"))
	}))
	defer site.Close()
	rdb := streamstest.Start(t).Client()
	ctx := context.Background()
	layout := streams.NewLayout("robots-lock", 1)
	cfg := robotsConfig{agent: "test", retry: time.Second, tries: 3, maxDelay: time.Minute, timeout: 5 * time.Second}
	a := newRobots(rdb, layout, site.Client(), cfg, nil, zap.NewNop())
	b := newRobots(rdb, layout, site.Client(), cfg, nil, zap.NewNop())
	u, _ := url.Parse(site.URL + "/private/x")
	origin := originOf(u)

	done := make(chan robotsVerdict)
	go func() {
		v, err := a.check(ctx, u)
		if err != nil {
			t.Error(err)
		}
		done <- v
	}()
	for fetches.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	v, err := b.check(ctx, u)
	if err != nil || v.wait != robotsWait || v.unavailable {
		t.Fatalf("second process while the first fetches: %+v %v, want a wait of %s", v, err, robotsWait)
	}
	if n, _ := rdb.Exists(ctx, layout.ForHost(origin).RobotsLock(origin)).Result(); n != 0 {
		t.Errorf("a lock key of its own was written")
	}
	close(release)
	if v := <-done; v.allowed || v.fetched.IsZero() {
		t.Fatalf("first process: %+v, want /private/ disallowed by a fetch of its own", v)
	}
	if v, err := b.check(ctx, u); err != nil || v.allowed || v.wait != 0 || !v.fetched.IsZero() {
		t.Fatalf("second process after: %+v %v, want the stored answer", v, err)
	}
	if n := fetches.Load(); n != 1 {
		t.Fatalf("robots.txt fetched %d times, want once", n)
	}

	// A fetcher died holding the lock: the others wait until it expires, then fetch.
	key := layout.ForHost(origin).Robots(origin)
	c := newRobots(rdb, layout, site.Client(), cfg, nil, zap.NewNop())
	c.lockTTL = 200 * time.Millisecond
	if err := rdb.Set(ctx, key, c.lockRecord(), c.lockTTL).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := c.check(ctx, u); err != nil || v.wait != robotsWait {
		t.Fatalf("while a dead fetcher's lock holds: %+v %v, want a wait", v, err)
	}
	time.Sleep(300 * time.Millisecond)
	if v, err := c.check(ctx, u); err != nil || v.allowed || v.fetched.IsZero() {
		t.Fatalf("after the lock expired: %+v %v, want a fetch", v, err)
	}
	if n := fetches.Load(); n != 2 {
		t.Fatalf("robots.txt fetched %d times, want twice", n)
	}
}
