package fleet_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/handlers/fleet"
	"github.com/streamcrawl/streamcrawl/spiders/demosite"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// shop is a demo site served on loopback for one crawl, with the time of each request
// it answered.
type shop struct {
	site  *demosite.Site
	base  string
	mu    sync.Mutex
	hits  []time.Time
	paths map[string]int // requests by path
}

func newShop(t *testing.T, pages int, delay time.Duration) *shop {
	t.Helper()
	s := &shop{site: demosite.New(pages), paths: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits = append(s.hits, time.Now())
		s.paths[r.URL.Path]++
		s.mu.Unlock()
		if delay > 0 {
			time.Sleep(delay)
		}
		s.site.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s.base = srv.URL + "/"
	return s
}

// hitsAfter counts the requests the site received after t.
func (s *shop) hitsAfter(t time.Time) (n int, last time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range s.hits {
		if h.After(t) {
			n++
			if h.After(last) {
				last = h
			}
		}
	}
	return n, last
}

// fleetRig is a redis-server, a registry and worker goroutines writing items under dir.
type fleetRig struct {
	t   *testing.T
	ctx context.Context
	rdb *streams.Client
	reg *fleet.Registry
	dir string
	// quiet drops the workers' log (a test's log is kept in memory until it ends).
	quiet bool
	// logs are the workers' INFO and up, for tests that look at what a worker did.
	logs *observer.ObservedLogs
	obs  zapcore.Core
}

func newRig(t *testing.T) *fleetRig {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	rdb, err := streams.Connect(ctx, streams.ClientOptions{URL: streamstest.Start(t).URL()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	r := &fleetRig{t: t, ctx: ctx, rdb: rdb, reg: fleet.New(rdb.UniversalClient), dir: t.TempDir()}
	r.obs, r.logs = observer.New(zap.InfoLevel)
	return r
}

// worker starts fleet.Serve with stages until the returned stop is called; stop waits
// for Serve to return and fails the test on an error.
func (r *fleetRig) worker(name string, stages ...string) (stop func()) {
	ctx, cancel := context.WithCancel(r.ctx)
	done := make(chan error, 1)
	log := zaptest.NewLogger(r.t, zaptest.Level(zap.InfoLevel), zaptest.WrapOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		return zapcore.NewTee(c, r.obs)
	}))).Named(name)
	if r.quiet {
		log = zap.NewNop()
	}
	go func() {
		done <- fleet.Serve(ctx, fleet.WorkerOptions{Client: r.rdb, Stages: stages, Consumer: name,
			Out: filepath.Join(r.dir, "{crawl}.jsonl"), Concurrency: 16, PollInterval: 100 * time.Millisecond,
			Logger: log,
			// The demo site's always-failing pages are given up on quickly.
			Base: handlers.Options{RetryBase: 20 * time.Millisecond,
				Subscriber: streams.SubscriberConfig{RetryBackoff: 20 * time.Millisecond, MaxDeliveries: 2}}})
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					r.t.Errorf("worker %s: %v", name, err)
				}
			case <-time.After(time.Minute):
				r.t.Errorf("worker %s still running a minute after its stop", name)
			}
		})
	}
	r.t.Cleanup(stop)
	return stop
}

func (r *fleetRig) submit(name, spider string) {
	r.t.Helper()
	if _, err := r.reg.Submit(r.ctx, fleet.Submission{Name: name, Spider: []byte(spider)}); err != nil {
		r.t.Fatal(err)
	}
}

// waitState waits until crawl name is in state want, failing the test after timeout.
func (r *fleetRig) waitState(name string, want fleet.State, timeout time.Duration) fleet.Crawl {
	r.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		c, err := r.reg.Get(r.ctx, name)
		if err == nil && c.State == want {
			return c
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("crawl %s: %+v (%v) after %s, want state %s", name, c, err, timeout, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// items reads the JSONL items of crawl name.
func (r *fleetRig) items(name string) []map[string]any {
	r.t.Helper()
	f, err := os.Open(filepath.Join(r.dir, name+".jsonl"))
	if err != nil {
		r.t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			r.t.Fatalf("%s: %v", name, err)
		}
		out = append(out, m)
	}
	return out
}

// checkShopItems compares the items of crawl name with what the shop's spider must
// store: each product once, with its fields.
func (r *fleetRig) checkShopItems(name string, s *shop) {
	r.t.Helper()
	row := func(get func(string) string) string {
		return fmt.Sprintf("url=%s name=%s price=%s sku=%s", get("url"), get("name"), get("price"), get("sku"))
	}
	var want, got []string
	for _, w := range s.site.ExpectedItems(s.base) {
		want = append(want, row(func(f string) string { return w[f] }))
	}
	for _, l := range r.items(name) {
		got = append(got, row(func(f string) string { s, _ := l[f].(string); return s }))
	}
	sort.Strings(want)
	sort.Strings(got)
	if strings.Join(want, "\n") != strings.Join(got, "\n") {
		r.t.Errorf("crawl %s: %d items, want %d; first differences:\n%s", name, len(got), len(want), firstDiff(want, got))
	}
}

// firstDiff names a few lines of want missing from got and of got not in want.
func firstDiff(want, got []string) string {
	in := func(list []string) map[string]int {
		m := map[string]int{}
		for _, s := range list {
			m[s]++
		}
		return m
	}
	w, g := in(want), in(got)
	var b strings.Builder
	n := 0
	for s, c := range w {
		if g[s] < c && n < 5 {
			fmt.Fprintf(&b, "-%s\n", s)
			n++
		}
	}
	for s, c := range g {
		if w[s] < c && n < 10 {
			fmt.Fprintf(&b, "+%s (x%d)\n", s, c)
			n++
		}
	}
	return b.String()
}

// waitHits waits until the shop has answered n requests.
func (s *shop) waitHits(t *testing.T, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if got, _ := s.hitsAfter(time.Time{}); got >= n {
			return
		}
		if time.Now().After(deadline) {
			got, _ := s.hitsAfter(time.Time{})
			t.Fatalf("the site answered %d requests after %s, want %d", got, timeout, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// itemsIfAny is items, or none while the file does not exist.
func (r *fleetRig) itemsIfAny(name string) []map[string]any {
	if _, err := os.Stat(filepath.Join(r.dir, name+".jsonl")); err != nil {
		return nil
	}
	return r.items(name)
}
