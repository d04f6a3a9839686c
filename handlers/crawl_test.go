package handlers_test

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/spiders/demosite"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// Two Crawl calls share one crawl through a real Redis, each running some stages, as
// two processes would: every product of the shop ends in the store side's sink once.
func TestCrawlStagesSplitOverTwoCalls(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	site := demosite.New(300)
	shop := httptest.NewServer(site)
	defer shop.Close()
	sp, _, err := spiders.Parse("shop.yaml", []byte(site.SpiderYAML("split", shop.URL+"/")))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sink := newMemSink()
	stored := make(chan error, 1)
	var storeSt *inspect.Status // read by the store side once its counters are flushed
	go func() {
		st, err := handlers.Crawl(ctx, sp, quick(handlers.Options{Redis: srv.URL(), Stages: []string{streams.StageStore},
			Sink: sink, NoSeed: true}))
		if err == nil && !st.Done {
			t.Errorf("store side returned before the crawl was done: %+v", st)
		}
		storeSt = st
		stored <- err
	}()
	// Not Fresh: a reset would delete the crawl the store side runs (and is refused
	// while it runs); the server is new anyway.
	st, err := handlers.Crawl(ctx, sp, quick(handlers.Options{Redis: srv.URL(),
		Stages: []string{streams.StageFetch, streams.StageParse}}))
	if err != nil {
		t.Fatal(err)
	}
	if err := <-stored; err != nil {
		t.Fatal(err)
	}
	if !st.Done {
		t.Errorf("fetch/parse side: crawl not done: %+v", st)
	}
	want := site.ExpectedItems(shop.URL + "/")
	keys := sink.keys()
	if len(keys) != len(want) {
		t.Fatalf("sink holds %d items, the shop has %d products", len(keys), len(want))
	}
	for k, n := range keys {
		if n != 1 {
			t.Errorf("item %s stored %d times", k, n)
		}
	}
	// The fetch/parse side may read the counters before the store side's last flush
	// (once a second): the store side's own status, read after it, has them all.
	if storeSt.ItemsStored != int64(len(want)) {
		t.Errorf("status says %d items stored, want %d", storeSt.ItemsStored, len(want))
	}
}

// closeCounter is a sink that counts its Close calls.
type closeCounter struct {
	memSink
	closed atomic.Int32
}

func (c *closeCounter) Close(context.Context) error { c.closed.Add(1); return nil }

func TestCrawlRefusesBadOptions(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sp := titleSpider("badopts", "http://127.0.0.1:1")
	if _, err := handlers.Crawl(ctx, nil, quick(handlers.Options{})); err == nil {
		t.Error("no spider: no error")
	}
	sink := &closeCounter{memSink: *newMemSink()}
	_, err := handlers.Crawl(ctx, sp, quick(handlers.Options{Stages: []string{"fetch", "sotre"}, Sink: sink}))
	if err == nil || !strings.Contains(err.Error(), `"sotre"`) {
		t.Errorf("unknown stage: %v, want an error naming it", err)
	}
	// An output that cannot be opened fails before anything changes in Redis.
	srv := streamstest.Start(t)
	_, err = handlers.Crawl(ctx, sp, quick(handlers.Options{Redis: srv.URL(), Out: filepath.Join(t.TempDir(), "no", "such", "dir", "x.jsonl")}))
	if err == nil {
		t.Fatal("unwritable output: no error")
	}
	if n := srv.Client().DBSize(ctx).Val(); n != 0 {
		t.Errorf("a crawl refused at its output left %d keys in Redis", n)
	}
	// A sink given to a run without the store stage is still closed.
	if _, err := handlers.Crawl(ctx, sp, quick(handlers.Options{Redis: "redis://127.0.0.1:1/0", Stages: []string{"fetch"}, Sink: sink})); err == nil {
		t.Error("unreachable redis: no error")
	}
	// A parse-only run that is stopped (its ctx ends): not an error. Its ctx ends once it
	// runs, not during its start (a second was too short on a loaded machine: the start
	// itself ran out of time recording the spider).
	short, stop := context.WithTimeout(ctx, 5*time.Second)
	defer stop()
	if _, err := handlers.Crawl(short, sp, quick(handlers.Options{Redis: srv.URL(), Stages: []string{"parse"}, Sink: sink,
		NoSeed: true})); err != nil {
		t.Fatal(err)
	}
	if n := sink.closed.Load(); n != 3 {
		t.Errorf("sink closed %d times by three runs that did not store (bad stage, no redis, no store stage), want 3", n)
	}
}
