package handlers_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap/zaptest"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestSortedSetSeedKeyIsCrawled: seeds ZADDed to <crawl>:start_urls are crawled and
// the crawl reports done.
func TestSortedSetSeedKeyIsCrawled(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	rdb := srv.Client()
	site := newChainSite(40, 0)
	base := serve(t, site)
	sp := titleSpider("zseeds", base)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// URLs no page links to: only the seeds bring them in.
	for i := range 3 {
		if err := rdb.ZAdd(ctx, streams.NewKeys("zseeds").Seeds, redis.Z{Score: float64(i), Member: fmt.Sprintf("%s/%d?from=zset", base, i)}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	sink := newMemSink()
	if err := runCrawl(ctx, t, rdb, sp, sink, nil); err != nil {
		t.Fatal(err)
	}
	wantAllPages(t, sink, base, 40)
	for i := range 3 {
		if _, ok := sink.item(fmt.Sprintf(`["page","%s/%d?from=zset"]`, base, i)); !ok {
			t.Errorf("sorted-set seed %d not crawled", i)
		}
	}
	if n, _ := rdb.Exists(ctx, streams.NewKeys("zseeds").Seeds).Result(); n != 0 {
		t.Errorf("seed key still holds seeds")
	}
}

// TestSeedKeyOfAnotherTypeStopsTheCrawlWithAMessage: a hash at the seed key fails the
// start; one that appears mid-crawl ends an --until-done run with the same error.
func TestSeedKeyOfAnotherTypeStopsTheCrawlWithAMessage(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	rdb := srv.Client()
	chain := newChainSite(5, 100*time.Millisecond)
	base := serve(t, chain)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	sp := titleSpider("hashseeds", base)
	if err := rdb.HSet(ctx, streams.NewKeys("hashseeds").Seeds, "url", base+"/0").Err(); err != nil {
		t.Fatal(err)
	}
	err := runCrawl(ctx, t, rdb, sp, newMemSink(), nil)
	if !errors.Is(err, frontier.ErrSeedKeyType) || !strings.Contains(err.Error(), "hashseeds:start_urls is a hash") {
		t.Fatalf("run with a hash at the seed key: %v; want the seed key error", err)
	}

	// Mid-crawl: the key turns into a string while the run waits for the crawl to end.
	sp2 := titleSpider("lateseeds", base)
	if _, err := handlers.Seed(ctx, rdb, sp2, nil); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- handlers.Run(ctx, handlers.RunConfig{Client: rdb, Spider: sp2, UntilDone: true, Options: handlers.Options{Sink: newMemSink(),
			Subscriber: streams.SubscriberConfig{BlockTime: testBlockTime},
			Consumer:   "test", Stages: []string{streams.StageFetch, streams.StageParse, streams.StageStore},
			PollInterval: 50 * time.Millisecond, Logger: zaptest.NewLogger(t)}})
	}()
	for len(chain.counts()) == 0 && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond) // until the run is past its start
	}
	if err := rdb.Set(ctx, streams.NewKeys("lateseeds").Seeds, "http://oops/", 0).Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, frontier.ErrSeedKeyType) {
			t.Fatalf("run ended with %v; want the seed key error", err)
		}
	case <-ctx.Done():
		t.Fatal("run did not end: a wrong seed key hangs the crawl")
	}
}
