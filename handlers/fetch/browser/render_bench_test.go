package browser_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/handlers/fetch/browser"
	"github.com/streamcrawl/streamcrawl/handlers/fetch/browser/browsertest"
	"github.com/streamcrawl/streamcrawl/spiders"
)

// BenchmarkRenderSimplePage renders a small page with a script, one tab at a time
// (Tabs: 1) and 4 at once (Tabs: 4), and reports pages per second: what a page costs
// beside its own work (taking a tab, clearing it) shows here. A tab opened for each
// page cut it 4-5x.
func BenchmarkRenderSimplePage(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html><body><p>%s</p><script>document.body.append("ok")</script></body></html>`, r.URL.Path)
	}))
	defer srv.Close()
	for _, tabs := range []int{1, 4} {
		b.Run(fmt.Sprintf("tabs=%d", tabs), func(b *testing.B) {
			p, err := browser.New(context.Background(), browser.Config{ExecPath: browsertest.Chromium(b), Dial: browsertest.Dialer(),
				Tabs: tabs, LaunchTimeout: time.Minute, RetireAfter: 1 << 20})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close(context.Background())                     //nolint:errcheck // the benchmark is over
			pg := &spiders.Page{Wait: &spiders.Wait{Selector: "p"}} // no idle wait: the page's own cost
			job := func(i int) error {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				_, err := p.Render(ctx, browser.Job{URL: fmt.Sprintf("%s/p%d", srv.URL, i), Page: pg, Dial: browsertest.Dialer()})
				return err
			}
			if err := job(-1); err != nil { // the browser's start is not the page's cost
				b.Fatal(err)
			}
			b.SetParallelism(tabs)
			b.ResetTimer()
			start := time.Now()
			sem := make(chan struct{}, tabs)
			errs := make(chan error, b.N)
			for i := 0; i < b.N; i++ {
				sem <- struct{}{}
				go func(i int) {
					defer func() { <-sem }()
					errs <- job(i)
				}(i)
			}
			for i := 0; i < b.N; i++ {
				if err := <-errs; err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "pages/s")
		})
	}
}
