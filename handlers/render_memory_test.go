package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/handlers/fetch/browser"
	"github.com/streamcrawl/streamcrawl/handlers/fetch/browser/browsertest"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestRenderedCrawlSurvivesAMemoryKill crawls a page that builds a DOM of hundreds of
// MB (16 MB every 50 ms, up to 1.2 GB) beside three plain pages, with a browser ceiling
// of 512 MiB and an allowance of 256 MiB, max_retries 1: the growing page's browser is
// killed each time (twice: the page and its retry), the page becomes a dead letter
// saying why, and the plain pages' items are stored. (The pages wait for #done, which
// the growing page would add once it is done growing.)
func TestRenderedCrawlSurvivesAMemoryKill(t *testing.T) {
	exe := browsertest.Chromium(t)
	var grows atomic.Int64
	base := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		switch {
		case r.URL.Path == "/grow":
			grows.Add(1)
			fmt.Fprint(w, `<!doctype html><html><body><h1>grow</h1><div id="heap" style="display:none"></div><script>
let made = 0; const heap = document.getElementById("heap");
function grow() { if (made >= 75) { heap.id = "done"; return; } made++; heap.appendChild(document.createTextNode(String(made).padEnd(16 << 20, "abcdefghij"))); setTimeout(grow, 50); }
grow();
</script></body></html>`)
		case strings.HasPrefix(r.URL.Path, "/plain"):
			fmt.Fprintf(w, `<!doctype html><html><body><h1 id="done">%s</h1></body></html>`, r.URL.Path)
		default:
			http.NotFound(w, r)
		}
	}))
	y := fmt.Sprintf(`name: memkill
start_urls: [%[1]s/grow, %[1]s/plain1, %[1]s/plain2, %[1]s/plain3]
allowed_domains: [127.0.0.1]
render: true
page:
  wait: {selector: "#done"}
items:
  - type: doc
    when: "h1"
    key: [title]
    fields:
      title: "h1"
settings:
  max_retries: 1
  download_timeout: 60s
  allow_networks: [127.0.0.1/32]
`, base)
	sp, _, err := spiders.Parse("memkill.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	srv := streamstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sink := newMemSink()
	if err := runCrawl(ctx, t, srv.Client(), sp, sink, func(c *handlers.RunConfig) {
		c.Browser = &browser.Config{ExecPath: exe, Browsers: 1, Tabs: 1, MaxMemory: 512 << 20, MemoryAllowance: 256 << 20}
	}); err != nil {
		t.Fatal(err)
	}
	sink.mu.Lock()
	var titles []string
	for _, it := range sink.last {
		titles = append(titles, fmt.Sprint(it.Fields["title"]))
	}
	sink.mu.Unlock()
	stats, err := srv.Client().HGetAll(ctx, streams.NewKeys("memkill").Stats).Result()
	if err != nil {
		t.Fatal(err)
	}
	st, err := inspect.ReadStatus(ctx, srv.Client(), streams.NewLayout("memkill", 1))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("items %v; /grow asked %d times; dead letters %d; browser_killed_memory %s, render_browser_lost %s",
		titles, grows.Load(), st.DeadLetters, stats["browser_killed_memory"], stats["render_browser_lost"])
	if len(titles) != 3 || strings.Contains(strings.Join(titles, ","), "grow") {
		t.Errorf("items %v, want the 3 plain pages' and not the growing one's", titles)
	}
	if grows.Load() != 2 || st.DeadLetters != 1 || stats["browser_killed_memory"] != "2" {
		t.Errorf("/grow asked %d times, %d dead letters, %s kills: want 2, 1, 2", grows.Load(), st.DeadLetters, stats["browser_killed_memory"])
	}
	if left := browsertest.Processes(); len(left) > 0 {
		t.Errorf("chromium processes left after the crawl: %v", left)
	}
}
