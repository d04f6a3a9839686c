package browser_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/handlers/fetch/browser"
	"github.com/streamcrawl/streamcrawl/handlers/fetch/browser/browsertest"
	"github.com/streamcrawl/streamcrawl/spiders"
)

// TestScrollWaitsForTheLateReaction scrolls an infinite list whose page reacts to a
// scroll late: its scroll handler is busy for twice the idle quiet before it asks for
// the next batch, as any page's is when the machine is loaded. The list must be read
// to its end: a scroll the page has not reacted to yet is not the end of the list
// (taking it for the end lost the products a category showed only after scrolling).
func TestScrollWaitsForTheLateReaction(t *testing.T) {
	const quiet = 100 * time.Millisecond
	var batches atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/list":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, `<!doctype html><html><body><ul id="list"></ul><script>
let batch = 0;
function load() {
  if (batch >= 3) return;
  batch++;
  fetch("/api/batch?n=" + batch).then(r => r.text()).then(t => {
    const ul = document.getElementById("list");
    for (let i = 0; i < 10; i++) { const li = document.createElement("li"); li.textContent = t + "-" + i; li.style.height = "200px"; ul.appendChild(li); }
  });
}
load();
window.addEventListener("scroll", () => {
  const t = performance.now();
  while (performance.now() - t < %d) {} // a busy page: its reaction comes late
  load();
});
</script></body></html>`, 2*quiet.Milliseconds())
		case "/api/batch":
			batches.Add(1)
			fmt.Fprint(w, "batch"+r.URL.Query().Get("n"))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	p := newPool(t, browser.Config{IdleQuiet: quiet})
	pg := &spiders.Page{Wait: &spiders.Wait{Selector: "#list li"}, Actions: []spiders.Action{{Scroll: &spiders.Scroll{UntilIdle: true}}}}
	res := render(t, p, browser.Job{URL: srv.URL + "/list", Page: pg, Dial: browsertest.Dialer()})
	html := string(res.HTML)
	for _, want := range []string{"batch1-0", "batch2-9", "batch3-9"} {
		if !strings.Contains(html, want) {
			t.Errorf("DOM lacks %q (%d batches asked for): the scroll stopped before the page reacted to it", want, batches.Load())
		}
	}
}

// TestEndlessFeedYieldsWhatLoaded scrolls, until it stops growing, a feed that appends a
// batch on every scroll, forever. The scroll must stop at its budget and the page be
// taken with the batches it has: it scrolled until the page's deadline, and the whole
// page failed (retried, then dead-lettered) with 57-87 batches in its DOM.
func TestEndlessFeedYieldsWhatLoaded(t *testing.T) {
	var batches atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/feed":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, `<!doctype html><html><body><ul id="feed"></ul><script>
let n = 0;
function more() {
  fetch("/api/batch?n=" + (++n)).then(r => r.text()).then(t => {
    const ul = document.getElementById("feed");
    for (let i = 0; i < 5; i++) { const li = document.createElement("li"); li.textContent = t + "-" + i; li.style.height = "300px"; ul.appendChild(li); }
  });
}
more();
window.addEventListener("scroll", more);
</script></body></html>`)
		case "/api/batch":
			batches.Add(1)
			fmt.Fprint(w, "batch"+r.URL.Query().Get("n"))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	p := newPool(t, browser.Config{LaunchTimeout: time.Minute})
	pg := &spiders.Page{Wait: &spiders.Wait{Selector: "#feed li"}, Actions: []spiders.Action{{Scroll: &spiders.Scroll{UntilIdle: true}}}}
	wctx, wcancel := context.WithTimeout(context.Background(), time.Minute)
	_, err := p.Render(wctx, browser.Job{URL: srv.URL + "/none", Dial: browsertest.Dialer()}) // starts the browser
	wcancel()
	if err != nil {
		t.Fatal(err)
	}
	// 45 s for the page: 100 scrolls take at least 100 x 280 ms (the quiet and two
	// frames), so the scroll cannot end on its own before the page's deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	res, err := p.Render(ctx, browser.Job{URL: srv.URL + "/feed", Page: pg, Dial: browsertest.Dialer()})
	if err != nil {
		t.Fatalf("the endless feed: %v (%d batches asked for)", err, batches.Load())
	}
	html := string(res.HTML)
	if !strings.Contains(html, "batch1-4") || !strings.Contains(html, "batch2-0") {
		t.Errorf("the page lacks the batches it loaded (%d asked for): %.300s", batches.Load(), html)
	}
	if res.BudgetCuts != 1 {
		t.Errorf("%d budget cuts, want the scroll's 1", res.BudgetCuts)
	}
}
