package handlers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestFetchersPauseWhileTheParseStageIsBehind: with no parse process, fetchers stop
// once the responses backlog reaches its bound instead of filling Redis.
func TestFetchersPauseWhileTheParseStageIsBehind(t *testing.T) {
	srv := streamstest.Start(t)
	rdb := srv.Client()
	site := &recSite{n: 0, delay: 20 * time.Millisecond}
	base := serve(t, site)
	sp := politeSpider("backlog", base)
	sp.Settings.Concurrency = 4
	var urls []string
	for i := 0; i < 200; i++ {
		urls = append(urls, fmt.Sprintf("%s/p/%d", base, i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := handlers.Seed(ctx, rdb, sp, urls); err != nil {
		t.Fatal(err)
	}
	if err := rdb.XGroupCreateMkStream(ctx, streams.NewKeys("backlog").Responses, streams.StageParse, "0").Err(); err != nil {
		t.Fatal(err)
	}
	err := handlers.Run(ctx, handlers.RunConfig{Client: rdb, Spider: sp, Options: handlers.Options{Stages: []string{streams.StageFetch},
		Subscriber: streams.SubscriberConfig{BlockTime: testBlockTime},
		MaxBacklog: 30, Consumer: "f", Logger: zaptest.NewLogger(t)}})
	if err != nil {
		t.Fatal(err)
	}
	n := rdb.XLen(context.Background(), streams.NewKeys("backlog").Responses).Val()
	// The bound is checked every 100 ms (at 4 × 50 pages/s: 20 pages a look), plus the 4
	// in flight; allow one late look on a loaded machine.
	if n < 30 || n > 30+2*20+4 {
		t.Fatalf("responses stream holds %d entries; want the backlog bound 30 plus at most 44", n)
	}
	if n >= 200 {
		t.Fatal("fetchers never paused")
	}
	t.Logf("responses stream stopped at %d entries (bound 30)", n)
}
