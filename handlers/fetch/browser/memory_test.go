package browser_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/handlers/fetch/browser"
	"github.com/streamcrawl/streamcrawl/handlers/fetch/browser/browsertest"
	"github.com/streamcrawl/streamcrawl/spiders"
)

// growPage builds a DOM of text in a hidden element, 16 MB every 50 ms (at most
// 320 MB/s), until it holds 1.2 GB: far past any ceiling of the test, and bounded, so
// that a pool that does not kill it cannot take the machine down.
const growPage = `<!doctype html><html><body><p id="ok">start</p><div id="heap" style="display:none"></div><script>
let made = 0;
const heap = document.getElementById("heap");
function grow() {
  if (made >= 75) return;
  made++;
  heap.appendChild(document.createTextNode(String(made).padEnd(16 << 20, "abcdefghij")));
  setTimeout(grow, 50);
}
grow();
</script></body></html>`

// chromePSS is the PSS of every Chromium process under this test process.
func chromePSS() int64 {
	var total int64
	self := os.Getpid()
	procs := browser.Processes()
	for _, pid := range browser.Descendants(procs, self) {
		if pid == self {
			continue
		}
		pss, rss := browser.Memory(pid)
		if pss == 0 {
			pss = rss
		}
		total += pss
	}
	return total
}

// TestMemoryCeilingDuringPage renders a page that builds a DOM of hundreds of MB under a
// ceiling of 512 MiB with an allowance of 256 MiB: the pool kills its browser while the
// page renders, the page fails with ErrBrowserLost saying why (counted as a kill, not a
// crash), and a plain page rendered after it (a new browser) is stored. The test samples
// the PSS of every Chromium process itself, every 20 ms: it never goes above the ceiling
// plus the allowance by more than what the page can add between two of the pool's
// samples (16 MB per 50 ms at 250 ms: 80 MB, doubled for a loaded machine: 160 MiB).
func TestMemoryCeilingDuringPage(t *testing.T) {
	browsertest.Chromium(t)
	var grows atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if r.URL.Path == "/grow" {
			grows.Add(1)
			fmt.Fprint(w, growPage)
			return
		}
		fmt.Fprint(w, `<html><body><p>plain</p></body></html>`)
	}))
	t.Cleanup(srv.Close)
	const ceiling, allowance = 512 << 20, 256 << 20
	var events atomic.Int64
	p := newPool(t, browser.Config{MaxMemory: ceiling, MemoryAllowance: allowance, Tabs: 2,
		OnEvent: func(e string) {
			if e == "browser_killed_memory" {
				events.Add(1)
			}
		}})

	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if m := chromePSS(); m > peak.Load() {
				peak.Store(m)
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	// Twice, as the fetcher retries it: each time its browser is killed.
	for i := 0; i < 2; i++ {
		began := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
		_, err := p.Render(ctx, browser.Job{URL: srv.URL + "/grow", Dial: browsertest.Dialer(), Page: waitMS(30000)})
		cancel()
		t.Logf("peak so far %d MiB, after %s", peak.Load()>>20, time.Since(began))
		if !errors.Is(err, browser.ErrBrowserLost) || !strings.Contains(err.Error(), "above its ceiling of 512 MiB") {
			t.Fatalf("render %d of the growing page: %v, want ErrBrowserLost above the ceiling", i+1, err)
		}
		t.Logf("render %d: %v", i+1, err)
	}
	res := render(t, p, browser.Job{URL: srv.URL + "/plain", Dial: browsertest.Dialer()})
	close(stop)
	<-sampled
	if !strings.Contains(string(res.HTML), "plain") {
		t.Errorf("the page after the kills: %s", res.HTML)
	}
	st := p.Stats()
	t.Logf("PSS peak %d MiB (ceiling %d MiB + allowance %d MiB); stats %+v", peak.Load()>>20, ceiling>>20, allowance>>20, st)
	if st.KilledMemory != 2 || events.Load() != 2 || st.Crashes != 0 || st.PagesLost != 2 {
		t.Errorf("stats %+v, events %d: want 2 kills counted, no crash, 2 pages lost", st, events.Load())
	}
	if limit := int64(ceiling + allowance + 160<<20); peak.Load() > limit {
		t.Errorf("PSS peaked at %d MiB, above %d MiB", peak.Load()>>20, limit>>20)
	}
	if grows.Load() != 2 {
		t.Errorf("growing page asked %d times, want 2", grows.Load())
	}
}

// waitMS is a page that waits ms after load.
func waitMS(ms int) *spiders.Page { return &spiders.Page{Wait: &spiders.Wait{MS: ms}} }
