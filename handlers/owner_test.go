package handlers_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestACrawlKnowsItsSpider: while one spider's crawl runs, a second spider of the same
// name can neither start it over (--fresh: refused, naming the consumers alive, where it
// wiped the first crawl's state under it and both ended mixed) nor join it (another
// spider: refused); the first ends untouched with all its pages. Once nothing runs,
// --fresh starts the crawl over with the second spider.
func TestACrawlKnowsItsSpider(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	slow := newChainSite(20, 100*time.Millisecond)
	base := serve(t, slow)
	first := titleSpider("owned", base)
	first.Settings.PerHostConcurrency = 1
	second := titleSpider("owned", base)
	second.Settings.MaxPages = 5
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sink := newMemSink()
	done := make(chan error, 1)
	go func() {
		_, err := handlers.Crawl(ctx, first, handlers.Options{Redis: srv.URL(), Sink: sink,
			Consumer: "first-process"})
		done <- err
	}()
	l := streams.NewLayout("owned", 1)
	deadline := time.Now().Add(30 * time.Second)
	for {
		alive, err := inspect.Alive(ctx, srv.Client(), l)
		if err != nil {
			t.Fatal(err)
		}
		if len(alive) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first crawl's consumers never showed up")
		}
		time.Sleep(50 * time.Millisecond)
	}
	_, err := handlers.Crawl(ctx, second, handlers.Options{Redis: srv.URL(), Fresh: true, Sink: newMemSink()})
	if !errors.Is(err, inspect.ErrRunning) || !strings.Contains(err.Error(), "first-process") {
		t.Errorf("--fresh while the crawl runs: %v; want ErrRunning naming first-process", err)
	}
	_, err = handlers.Crawl(ctx, second, handlers.Options{Redis: srv.URL(), Sink: newMemSink()})
	if !errors.Is(err, handlers.ErrOtherSpider) {
		t.Errorf("another spider on the running crawl: %v; want ErrOtherSpider", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	wantAllPages(t, sink, base, 20)
	if n := len(sink.keys()); n != 20 {
		t.Errorf("the first crawl stored %d items, want its 20", n)
	}
	again := newMemSink()
	st, err := handlers.Crawl(ctx, second, handlers.Options{Redis: srv.URL(), Fresh: true, Sink: again})
	if err != nil || !st.Done {
		t.Fatalf("--fresh once nothing runs: %v (done %v)", err, st != nil && st.Done)
	}
	if n := len(again.keys()); n == 0 || n > 5 {
		t.Errorf("the second spider's crawl stored %d items; want its own 1 to 5 (max_pages 5; none if not started over)", n)
	}
}
