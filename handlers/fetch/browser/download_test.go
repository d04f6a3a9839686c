package browser_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/handlers/fetch/browser"
	"github.com/streamcrawl/streamcrawl/handlers/fetch/browser/browsertest"
)

// TestRenderDownloadIsADownloadError renders URLs whose answer the browser takes for a
// download (Content-Disposition: attachment, with an HTML or a PDF body): Render must
// say so with a *DownloadError carrying the answer's status and headers, which the
// fetcher fetches over HTTP; it was an error like any other, retried and
// dead-lettered.
func TestRenderDownloadIsADownloadError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/report.csv":
			w.Header().Set("Content-Type", "text/csv")
			w.Header().Set("Content-Disposition", `attachment; filename="report.csv"`)
			fmt.Fprint(w, "a,b\n1,2\n")
		case "/page.html":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("Content-Disposition", "attachment")
			fmt.Fprint(w, "<!doctype html><p>saved, not shown</p>")
		}
	}))
	t.Cleanup(srv.Close)
	p := newPool(t, browser.Config{LaunchTimeout: time.Minute})
	for _, path := range []string{"/report.csv", "/page.html"} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		res, err := p.Render(ctx, browser.Job{URL: srv.URL + path, Dial: browsertest.Dialer()})
		cancel()
		var dl *browser.DownloadError
		if !errors.As(err, &dl) {
			t.Errorf("%s: got %v, %v; want a *browser.DownloadError", path, res, err)
			continue
		}
		if dl.URL != srv.URL+path || dl.Status != http.StatusOK || dl.Headers.Get("Content-Disposition") == "" {
			t.Errorf("%s: download error %+v: want its URL, 200 and its Content-Disposition", path, dl)
		}
	}
}
