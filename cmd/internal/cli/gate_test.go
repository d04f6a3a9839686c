package cli

import (
	"net/http"
	"sync"
	"testing"
	"time"
)

// gate stands in front of a test's sites and lets a number of their requests through;
// the next ones wait until the test lets more through or opens it. A fault set by the
// pages served lands at that point of the crawl whatever the workers' pace (with or
// without the race detector, on a quiet or a loaded machine): the crawl is provably
// mid-way, with the held requests still to answer.
type gate struct {
	match  func(*http.Request) bool // the requests counted and held; nil: all
	mu     sync.Mutex
	limit  int64 // requests let through before the gate holds; -1: open
	passed int64 // requests let through
	held   int   // requests waiting now
	change chan struct{}
}

// newGate returns a gate that lets limit matching requests through, then holds.
func newGate(limit int64, match func(*http.Request) bool) *gate {
	return &gate{match: match, limit: limit, change: make(chan struct{})}
}

// wrap returns h behind the gate (one gate may stand in front of several sites).
func (g *gate) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.match == nil || g.match(r) {
			if !g.pass(r) {
				return // the client gave up waiting
			}
		}
		h.ServeHTTP(w, r)
	})
}

// pass waits until r may go through and counts it; false when r was cancelled first.
func (g *gate) pass(r *http.Request) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.limit >= 0 && g.passed >= g.limit {
		g.held++
		g.notify()
		ch := g.change
		g.mu.Unlock()
		select {
		case <-ch:
		case <-r.Context().Done():
		}
		g.mu.Lock()
		g.held--
		if r.Context().Err() != nil {
			g.notify()
			return false
		}
	}
	g.passed++
	g.notify()
	return true
}

// notify wakes everyone waiting for a change. Called with g.mu held.
func (g *gate) notify() {
	close(g.change)
	g.change = make(chan struct{})
}

// let lets n more requests through.
func (g *gate) let(n int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.limit >= 0 {
		g.limit += n
		g.notify()
	}
}

// open lets every request through from now on.
func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.limit = -1
	g.notify()
}

// state returns the requests let through so far and those waiting now.
func (g *gate) state() (passed int64, held int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.passed, g.held
}

// waitHeld waits until the gate holds a request (the crawl reached the gate and waits
// for it), failing the test after timeout. It returns the requests let through.
func (g *gate) waitHeld(t testing.TB, timeout time.Duration) int64 {
	t.Helper()
	deadline := time.After(timeout)
	for {
		g.mu.Lock()
		passed, held, ch := g.passed, g.held, g.change
		g.mu.Unlock()
		if held > 0 {
			return passed
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("the gate held no request within %v (%d let through)", timeout, passed)
		}
	}
}

// TestGateHoldsLetsAndOpens: the gate lets its limit of matching requests through, holds
// the next until let or open, and never holds the requests it does not match.
func TestGateHoldsLetsAndOpens(t *testing.T) {
	t.Parallel()
	g := newGate(2, func(r *http.Request) bool { return r.URL.Path != "/free" })
	base := serveSite(t, g.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})))
	get := func(path string) <-chan int {
		done := make(chan int, 1)
		go func() {
			resp, err := http.Get(base + path)
			if err != nil {
				done <- 0
				return
			}
			resp.Body.Close()
			done <- resp.StatusCode
		}()
		return done
	}
	for range 2 {
		if code := <-get("a"); code != http.StatusOK {
			t.Fatalf("a request within the limit: %d", code)
		}
	}
	held := get("b")
	if passed := g.waitHeld(t, 10*time.Second); passed != 2 {
		t.Errorf("%d let through before the gate held, want 2", passed)
	}
	if code := <-get("free"); code != http.StatusOK {
		t.Errorf("a request the gate does not match: %d", code)
	}
	if passed, n := g.state(); passed != 2 || n != 1 {
		t.Errorf("gate: %d let through, %d held; want 2 (the one not matched is not counted) and 1", passed, n)
	}
	g.let(1)
	if code := <-held; code != http.StatusOK {
		t.Errorf("the request let through: %d", code)
	}
	held = get("c")
	g.waitHeld(t, 10*time.Second)
	g.open()
	if code := <-held; code != http.StatusOK {
		t.Errorf("the request held when the gate opened: %d", code)
	}
	if code := <-get("d"); code != http.StatusOK {
		t.Errorf("a request after the gate opened: %d", code)
	}
	if passed, held := g.state(); passed != 5 || held != 0 {
		t.Errorf("gate: %d let through, %d held; want 5 and 0", passed, held)
	}
}
