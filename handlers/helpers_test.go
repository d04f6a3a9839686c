package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap/zaptest"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/processors"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
)

// chainSite serves /0 ... /n-1; page i links to i+1 and to the home page, and shows
// <h1>page i</h1>. It counts requests and can delay answers.
type chainSite struct {
	n     int
	delay time.Duration
	mu    sync.Mutex
	hits  map[string]int
}

func newChainSite(n int, delay time.Duration) *chainSite {
	return &chainSite{n: n, delay: delay, hits: map[string]int{}}
}

func (s *chainSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.hits[r.URL.Path]++
	s.mu.Unlock()
	time.Sleep(s.delay)
	var i int
	if _, err := fmt.Sscanf(r.URL.Path, "/%d", &i); err != nil || i < 0 || i >= s.n {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/html")
	var b strings.Builder
	fmt.Fprintf(&b, "<html><body><h1>page %d</h1><a href=\"/0\">home</a>", i)
	// A fan-out: page i links to 2i+1 and 2i+2, so the crawl is wide, not a chain.
	for _, j := range []int{2*i + 1, 2*i + 2} {
		if j < s.n {
			fmt.Fprintf(&b, "<a href=\"/%d\">next</a>", j)
		}
	}
	b.WriteString("</body></html>")
	_, _ = w.Write([]byte(b.String()))
}

func (s *chainSite) counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.hits))
	for k, v := range s.hits {
		out[k] = v
	}
	return out
}

// loopback is the allow list of the test sites: 127.0.0.1 and ::1, nothing else private.
var loopback = []string{"127.0.0.1/32", "::1/128"}

// titleSpider is a Go spider: one item {title} per page, following every link.
func titleSpider(name, base string) *spiders.Spider {
	sp := &spiders.Spider{Name: name, StartURLs: []string{base + "/0"}, AllowedDomains: []string{"127.0.0.1"},
		Settings: spiders.Settings{AllowNetworks: append([]string(nil), loopback...)}}
	sp.Handle("parse", func(ctx context.Context, res *spiders.Response, out *spiders.Output) error {
		doc, err := res.Doc()
		if err != nil {
			return err
		}
		out.Yield(spiders.NewItem("page", map[string]any{"title": doc.Find("h1").Text(), "url": res.URL}))
		for _, link := range res.Links("a[href]") {
			req, err := res.Follow(link, "parse")
			if err != nil {
				return err
			}
			out.Follow(req)
		}
		return nil
	})
	return sp
}

// testBlockTime is how long the tests' subscribers block in a read: a run that stops
// waits for the read in flight, 2 s with the default.
const testBlockTime = 200 * time.Millisecond

// quick returns o with the settings of the tests' Crawl calls: reads block
// testBlockTime and retries wait 20ms, as in runCrawl (the demo shop's failing pages
// are retried).
func quick(o handlers.Options) handlers.Options {
	o.RetryBase = 20 * time.Millisecond
	o.Subscriber = streams.SubscriberConfig{BlockTime: testBlockTime, RetryBackoff: 20 * time.Millisecond}
	return o
}

// runCrawl seeds sp and runs every stage until done (or ctx ends).
func runCrawl(ctx context.Context, t *testing.T, rdb redis.UniversalClient, sp *spiders.Spider, sink processors.Sink, mod func(*handlers.RunConfig)) error {
	t.Helper()
	if _, err := handlers.Seed(ctx, rdb, sp, nil); err != nil {
		t.Fatal(err)
	}
	cfg := handlers.RunConfig{
		Client: rdb, Spider: sp, UntilDone: true, Options: handlers.Options{Sink: sink, Consumer: "test",
			Stages:     []string{streams.StageFetch, streams.StageParse, streams.StageStore},
			RetryBase:  20 * time.Millisecond,
			Subscriber: streams.SubscriberConfig{BlockTime: testBlockTime, RetryBackoff: 20 * time.Millisecond, MaxDeliveries: 3, ShutdownTimeout: 5 * time.Second},
			Logger:     zaptest.NewLogger(t),
		}}
	if mod != nil {
		mod(&cfg)
	}
	return handlers.Run(ctx, cfg)
}

func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// memSink is an in-memory sink for tests: it records every Store call.
type memSink struct {
	mu    sync.Mutex
	items map[string]int // key -> times stored
	last  map[string]spiders.Item
}

func newMemSink() *memSink { return &memSink{items: map[string]int{}, last: map[string]spiders.Item{}} }

func (m *memSink) Store(_ context.Context, it *spiders.Item) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.items[it.Key()]++
	m.last[it.Key()] = *it
	return m.items[it.Key()] == 1, nil
}

func (m *memSink) item(key string) (spiders.Item, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	it, ok := m.last[key]
	return it, ok
}

func (m *memSink) Close(context.Context) error { return nil }

func (m *memSink) keys() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]int{}
	for k, v := range m.items {
		out[k] = v
	}
	return out
}
