package handlers_test

import (
	"context"
	"io"
	"net/http"
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

// TestRenderedDownloadIsFetchedOverHTTP crawls, with render: true, a page answered
// with Content-Disposition: attachment: the browser takes it for a download and shows
// nothing, so its body is fetched over HTTP and parsed like any answer (its item is
// stored), with no dead letter. It was retried as a render error and dead-lettered.
func TestRenderedDownloadIsFetchedOverHTTP(t *testing.T) {
	exe := browsertest.Chromium(t)
	base := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		switch r.URL.Path {
		case "/export":
			w.Header().Set("Content-Disposition", `attachment; filename="export.html"`)
			io.WriteString(w, `<html><body><p id="title">the export</p></body></html>`) //nolint:errcheck // test
		default:
			http.NotFound(w, r)
		}
	}))
	sp, _, err := spiders.Parse("download.yaml", []byte(`name: jsdownload
start_urls: [`+base+`/export]
allowed_domains: [127.0.0.1]
render: true
items:
  - type: page
    when: "#title"
    fields: {title: "#title"}
settings:
  allow_networks: [127.0.0.1/32]
  obey_robots: false
`))
	if err != nil {
		t.Fatal(err)
	}
	srv := streamstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sink := newMemSink()
	if err := runCrawl(ctx, t, srv.Client(), sp, sink, func(c *handlers.RunConfig) {
		c.Browser = &browser.Config{ExecPath: exe, Tabs: 1, LaunchTimeout: time.Minute}
	}); err != nil {
		t.Fatal(err)
	}
	sink.mu.Lock()
	var title string
	for _, it := range sink.last {
		if s, ok := it.Fields["title"].(string); ok {
			title = s
		}
	}
	sink.mu.Unlock()
	if title != "the export" {
		t.Errorf("item title %q, want %q (the download's body, fetched over HTTP)", title, "the export")
	}
	st, err := inspect.ReadStatus(context.Background(), srv.Client(), streams.NewLayout("jsdownload", 1))
	if err != nil {
		t.Fatal(err)
	}
	if st.Stats["render_downloads"] != 1 || st.DeadLetters != 0 || st.Stats["render_errors"] != 0 {
		t.Errorf("render_downloads = %d (want 1), render_errors = %d (want 0), dead letters = %d (want 0)",
			st.Stats["render_downloads"], st.Stats["render_errors"], st.DeadLetters)
	}
}
