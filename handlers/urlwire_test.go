package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestURLsGoOnTheWireAsBrowsersSendThem: links with a space, quotes and a non-ASCII
// letter in their query reach the server percent-encoded (a raw space made Go's own
// server, like most, answer 400), and a link with credentials in its user info is
// fetched with them (Basic auth) while no item's _url and no log line carries them.
func TestURLsGoOnTheWireAsBrowsersSendThem(t *testing.T) {
	srv := streamstest.Start(t)
	var mu sync.Mutex
	queries := map[string]string{}
	site := counted(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		queries[r.URL.Path] = r.URL.RawQuery
		mu.Unlock()
		switch r.URL.Path {
		case "/":
			page(w, "home", `/search?q=red shoes&t='x'&z=`+"\u00fc", "/members")
		case "/members":
			if u, p, ok := r.BasicAuth(); !ok || u != "alice" || p != "s3cret" {
				http.Error(w, "who are you", http.StatusUnauthorized)
				return
			}
			page(w, "members")
		default:
			page(w, r.URL.Path)
		}
	}))
	base := serve(t, site)
	withCreds := strings.Replace(base, "http://", "http://alice:s3cret@", 1)
	sp := titleSpider("wire", withCreds)
	sp.StartURLs = []string{withCreds + "/"}
	sink := newMemSink()
	core, logs := observer.New(zapcore.DebugLevel)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := runCrawl(ctx, t, srv.Client(), sp, sink, func(c *handlers.RunConfig) { c.Logger = zap.New(core) }); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if got, want := queries["/search"], "q=red%20shoes&t=%27x%27&z=%C3%BC"; got != want {
		t.Errorf("the server saw the query %q, want %q", got, want)
	}
	mu.Unlock()
	if site.count("/members") != 1 || site.count("/search") != 1 {
		t.Errorf("/members fetched %d times, /search %d; want 1, 1", site.count("/members"), site.count("/search"))
	}
	if len(sink.keys()) != 3 {
		t.Errorf("%d items stored, want 3: %v", len(sink.keys()), sink.keys())
	}
	for key := range sink.keys() {
		it, _ := sink.item(key)
		if strings.Contains(it.URL, "s3cret") || strings.Contains(it.URL, "alice") {
			t.Errorf("item _url %q carries the credentials", it.URL)
		}
	}
	if n := logs.Len(); n == 0 {
		t.Fatal("no log lines to look at")
	}
	for _, e := range logs.All() {
		line := e.Message + fmt.Sprint(e.ContextMap())
		if strings.Contains(line, "s3cret") || strings.Contains(line, "alice") {
			t.Errorf("a log line carries the credentials: %s", line)
		}
	}
}
