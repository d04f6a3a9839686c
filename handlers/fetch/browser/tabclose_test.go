package browser_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/handlers/fetch/browser"
	"github.com/streamcrawl/streamcrawl/handlers/fetch/browser/browsertest"
)

// TestPageOutOfTimeLetsNothingOut renders pages that never finish loading (a script
// that never comes) while they keep asking for images, a kind they block, and gives
// up on each once its script was asked for: the tab is closed with image requests
// paused, and none of them may reach the site. Closing the tab before its proxy let
// the browser send them on through the proxy still open (22 to 55 images for 15
// pages).
func TestPageOutOfTimeLetsNothingOut(t *testing.T) {
	var images, held atomic.Int64
	holding := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/img.png":
			images.Add(1)
			w.Header().Set("Content-Type", "image/png")
		case "/hold.js":
			held.Add(1)
			select {
			case holding <- struct{}{}:
			default:
			}
			<-r.Context().Done()
		default:
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, `<!doctype html><html><body><img src="/img.png"><script>
setInterval(() => { const i = new Image(); i.src = "/img.png?" + Math.random(); document.body.appendChild(i) }, 2);
</script><script src="/hold.js"></script></body></html>`)
		}
	}))
	defer srv.Close()
	p := newPool(t, browser.Config{})
	const pages = 4
	for i := 0; i < pages; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		go func() {
			select {
			case <-holding: // the page is past its images and asking for more
				time.Sleep(300 * time.Millisecond)
			case <-ctx.Done():
			}
			cancel()
		}()
		_, err := p.Render(ctx, browser.Job{URL: fmt.Sprintf("%s/page%d", srv.URL, i), Dial: browsertest.Dialer()})
		cancel()
		if err == nil {
			t.Fatalf("page %d rendered, want it given up on", i)
		}
	}
	time.Sleep(time.Second) // what a closed tab let go has had time to arrive
	if n := held.Load(); n != pages {
		t.Errorf("%d pages reached their script, want %d", n, pages)
	}
	if n := images.Load(); n != 0 {
		t.Errorf("%d image requests reached the site from pages given up on, want none", n)
	}
}
