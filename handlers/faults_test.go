package handlers_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

func wantAllPages(t *testing.T, sink *memSink, base string, n int) {
	t.Helper()
	got := sink.keys()
	for i := 0; i < n; i++ {
		key := fmt.Sprintf(`["page","%s/%d"]`, base, i)
		if got[key] == 0 {
			t.Errorf("item of page %d never stored", i)
		}
	}
}

func TestPoisonPageEndsAsOneDeadLetter(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	rdb := srv.Client()
	site := newChainSite(30, 0)
	base := serve(t, site)
	sp := titleSpider("poison", base)
	good := sp.Callbacks["parse"]
	sp.Handle("parse", func(ctx context.Context, res *spiders.Response, out *spiders.Output) error {
		if strings.HasSuffix(res.URL, "/7") {
			panic("parser exploded on page 7")
		}
		return good(ctx, res, out)
	})
	sink := newMemSink()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := runCrawl(ctx, t, rdb, sp, sink, nil); err != nil {
		t.Fatal(err)
	}
	dead, err := inspect.ListDead(ctx, rdb, streams.NewLayout("poison", 1), 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(dead) != 1 {
		t.Fatalf("dead letters = %d, want 1: %+v", len(dead), dead)
	}
	d := dead[0]
	if d.Stage != "parse" || d.Deliveries != 3 || !strings.Contains(d.Error, "parser exploded on page 7") {
		t.Fatalf("dead letter = stage %q deliveries %d error %q; want parse, 3, the panic message", d.Stage, d.Deliveries, d.Error)
	}
	// Page 7's children (15, 16) are only linked from 7: they are never found. The
	// rest of the crawl completes.
	got := sink.keys()
	for i := 0; i < 30; i++ {
		key := fmt.Sprintf(`["page","%s/%d"]`, base, i)
		lost := i == 7 || i == 15 || i == 16 || i == 31 || i == 32
		if (got[key] == 0) != lost {
			t.Errorf("page %d stored %d times; want stored=%v", i, got[key], !lost)
		}
	}
}

func TestMalformedEntriesGoToDeadLettersAtOnce(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	site := newChainSite(20, 0)
	base := serve(t, site)
	k := streams.NewKeys("bad")
	bad := []struct{ stream, why string }{
		{k.Requests, `{"v":1,"url":"not a url"}`},
		{k.Requests, `{"v":99,"url":"http://127.0.0.1/"}`},
		{k.Responses, `{not json`},
		{k.Items, `{"v":1,"type":""}`},
	}
	for _, b := range bad {
		if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: b.stream, Values: map[string]any{
			"_watermill_message_uuid": "u", "metadata": "", "payload": b.why}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// And entries that are not even Watermill messages.
	rdb.XAdd(ctx, &redis.XAddArgs{Stream: k.Responses, Values: map[string]any{"hello": "world"}})
	rdb.XAdd(ctx, &redis.XAddArgs{Stream: k.Items, Values: map[string]any{"_watermill_message_uuid": "u", "metadata": "\xc1", "payload": "x"}})
	sink := newMemSink()
	if err := runCrawl(ctx, t, rdb, titleSpider("bad", base), sink, nil); err != nil {
		t.Fatal(err)
	}
	wantAllPages(t, sink, base, 20)
	dead, err := inspect.ListDead(ctx, rdb, streams.NewLayout(k.Crawl, 1), 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(dead) != 6 {
		t.Fatalf("dead letters = %d, want 6", len(dead))
	}
	for _, d := range dead {
		if d.Deliveries > 1 {
			t.Errorf("dead letter %s (%s) took %d deliveries; malformed entries go at once", d.ID, d.Error, d.Deliveries)
		}
		if d.Error == "" {
			t.Errorf("dead letter %s has no error", d.ID)
		}
	}
}

func TestGracefulShutdownFinishesInFlightWork(t *testing.T) {
	srv := streamstest.Start(t)
	rdb := srv.Client()
	site := newChainSite(40, 300*time.Millisecond)
	base := serve(t, site)
	sp := titleSpider("graceful", base)
	sp.Settings.Concurrency = 4
	sink := newMemSink()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- runCrawl(ctx, t, rdb, sp, sink, nil) }()
	time.Sleep(1100 * time.Millisecond) // mid-crawl, fetches in flight
	cancel()
	stopped := time.Now()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if took := time.Since(stopped); took > 5*time.Second {
		t.Errorf("shutdown took %s, more than the 5s shutdown timeout", took)
	}
	k := streams.NewKeys("graceful")
	p, err := inspect.ReadProgress(context.Background(), rdb, streams.NewLayout(k.Crawl, 1))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range p.Stages {
		if s.Pending != 0 {
			t.Errorf("%s: %d entries pending after a graceful stop; in-flight work must finish and be acked", s.Group, s.Pending)
		}
	}
	if p.Done() {
		t.Fatal("the crawl was done before the stop: the test did not stop it mid-crawl")
	}
	// Resume: the crawl completes and no page was fetched twice.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel2()
	cfg := func(c *handlers.RunConfig) { c.Consumer = "test2" }
	if err := runCrawl(ctx2, t, rdb, sp, sink, cfg); err != nil {
		t.Fatal(err)
	}
	wantAllPages(t, sink, base, 40)
	for path, n := range site.counts() {
		if n != 1 {
			t.Errorf("%s fetched %d times; a graceful stop loses and repeats nothing", path, n)
		}
	}
}

func TestCrawlSurvivesRedisRestarts(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t, "--appendonly", "yes", "--appendfsync", "always")
	rdb := srv.Client()
	site := newChainSite(300, 20*time.Millisecond)
	base := serve(t, site)
	sp := titleSpider("restarts", base)
	sp.Settings.Concurrency = 4
	sink := newMemSink()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- runCrawl(ctx, t, rdb, sp, sink, nil) }()
	for i := 0; i < 2; i++ {
		time.Sleep(1500 * time.Millisecond)
		srv.Restart() // kill -9 and start again on the same port and data
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	wantAllPages(t, sink, base, 300)
	p, err := inspect.ReadProgress(ctx, rdb, streams.NewLayout("restarts", 1))
	if err != nil || !p.Done() {
		t.Fatalf("progress after restarts = %+v, %v; want done", p, err)
	}
	counts := site.counts()
	delete(counts, "/robots.txt")
	if len(counts) != 300 {
		t.Fatalf("site saw %d distinct pages, want 300", len(counts))
	}
}
