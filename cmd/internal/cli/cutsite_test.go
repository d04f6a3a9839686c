package cli

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/spiders/demosite"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// cutter answers some pages with their reply cut in the middle of the body: the status
// and headers as the site sends them, then half of the body, declared whole by its
// Content-Length and followed by a TCP reset (a middlebox or a crashed peer), or
// chunked and followed by a plain close without the last chunk (a server that died
// mid-reply). The pages of always are cut on every request, those of once on their
// first only. Pages are keyed path?query.
type cutter struct {
	h      http.Handler
	always map[string]bool
	once   map[string]bool
	// chunked are the cut pages whose reply is chunked; the others declare a
	// Content-Length.
	chunked map[string]bool

	mu   sync.Mutex
	seen map[string]int
}

func (c *cutter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.URL.RequestURI()
	c.mu.Lock()
	c.seen[key]++
	n := c.seen[key]
	always, once, chunked := c.always[key], c.once[key], c.chunked[key]
	c.mu.Unlock()
	if !always && !(once && n == 1) {
		c.h.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	c.h.ServeHTTP(rec, r)
	body := rec.Body.Bytes()
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer conn.Close()
	fmt.Fprintf(buf, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\n", rec.Code, http.StatusText(rec.Code), rec.Header().Get("Content-Type"))
	half := body[:len(body)/2]
	if chunked {
		fmt.Fprintf(buf, "Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n", len(half), half)
		_ = buf.Flush()
		return
	}
	fmt.Fprintf(buf, "Content-Length: %d\r\n\r\n%s", len(body), half)
	_ = buf.Flush()
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // close with a reset
	}
}

// TestSiteRepliesCutMidBody crawls a demo shop whose replies are cut mid-body for some
// product pages (each reachable by one URL only): two always, two on their first
// request only, of each one reset and one closed (see cutter). A cut reply must be
// retried, never parsed: the pages cut once end fetched whole (their items stored as
// they are), those cut always end dead letters saying reading the body failed (their
// items not stored), and nothing else is lost.
func TestSiteRepliesCutMidBody(t *testing.T) {
	t.Parallel()
	var cut *cutter
	c := newSiteCrawl(t, 300, 5*time.Millisecond, func(h http.Handler) http.Handler {
		cut = &cutter{h: h, always: map[string]bool{}, once: map[string]bool{}, chunked: map[string]bool{}, seen: map[string]int{}}
		return cut
	}, nil)
	site := c.site
	// Product pages reachable by their canonical URL only: a variant with tracking
	// parameters would store the item anyway.
	urls := map[string]int{}
	for _, u := range site.ReachableKind(false, demosite.HTML) {
		path, _, _ := strings.Cut(u, "?")
		urls[path]++
	}
	var picked []demosite.Product
	for _, p := range site.Products() {
		if urls[p.URL] == 1 && len(picked) < 4 {
			picked = append(picked, p)
		}
	}
	if len(picked) < 4 {
		t.Fatalf("the shop has %d products with one URL, want 4", len(picked))
	}
	cutAlways := map[string]bool{}
	cut.mu.Lock() // the site is serving already
	for i, p := range picked {
		if i < 2 {
			cut.always[p.URL] = true
			cutAlways[c.base+strings.TrimPrefix(p.URL, "/")] = true
		} else {
			cut.once[p.URL] = true
		}
		cut.chunked[p.URL] = i%2 == 1
	}
	cut.mu.Unlock()

	c.seed()
	procs := procList(c.startStages(2, 1, 1))
	waitAll(t, crawlTimeout, c.rdb, c.name, procs...)
	checkExit0(t, procs...)

	want := wantRequests(site.Reachable(false), site.ReachableKind(false, demosite.ServerError))
	for u := range cut.always {
		want[u] = fetchAttempts
	}
	for u := range cut.once {
		want[u] = 2
	}
	checkRequests(t, want, site.Requests())

	var items []map[string]string
	for _, it := range site.ExpectedItems(c.base) {
		if !cutAlways[it["url"]] {
			items = append(items, it)
		}
	}
	checkItems(t, readItems(t, c.outs[0]), items, "product", "url")
	checkFinished(t, c.rdb, c.name)

	wantDead := prefixed("stage=fetch ", setOf(site.ReachableKind(false, demosite.ServerError)))
	for u := range cut.always {
		wantDead["stage=fetch "+u] = 1
	}
	if d := diffCounts(wantDead, deadLetterPaths(t, c.rdb, c.name, c.base), 20); d != "" {
		t.Errorf("dead letters (-want +got):\n%s", d)
	}
	checkCutDeadLetters(t, c, cut.always)
	c.checkInFlight()
}

// checkCutDeadLetters checks that the dead letters of the pages cut always say the
// reply was cut.
func checkCutDeadLetters(t *testing.T, c *politeCrawl, always map[string]bool) {
	t.Helper()
	dead, err := inspect.ListDead(context.Background(), c.rdb, layoutOf(t, c.rdb, c.name), 1<<20)
	if err != nil {
		t.Fatalf("read dead letters: %v", err)
	}
	for _, e := range dead {
		r, err := spiders.UnmarshalRequest([]byte(e.Fields["payload"]))
		if err != nil {
			continue // reported by the dead letters' listing
		}
		path := strings.TrimPrefix(r.URL, strings.TrimSuffix(c.base, "/"))
		if !always[path] {
			continue
		}
		t.Logf("dead letter of %s: %s", path, e.Error)
		if !strings.Contains(e.Error, "read body") ||
			!strings.Contains(e.Error, "unexpected EOF") && !strings.Contains(e.Error, "connection reset by peer") {
			t.Errorf("dead letter of %s (reply cut mid-body) says %q, want it to say reading the body failed "+
				"(unexpected EOF, or connection reset by peer)", path, e.Error)
		}
	}
}
