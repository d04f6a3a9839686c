package handlers_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
)

// An embedded crawl (miniredis, whose XINFO reports a group's lag as the whole stream's
// length) that keeps its parsed responses for replay must not take the kept responses
// for a backlog: with a bound below the pages it keeps, the fetch gate stays open and the
// crawl finishes.
func TestEmbeddedCrawlKeepingResponsesIsNotHeldByTheBacklogGate(t *testing.T) {
	t.Parallel()
	site := newChainSite(60, 0)
	base := serve(t, site)
	sp := titleSpider("embkeep", base)
	sp.Settings.Retention = map[string]spiders.StreamRetention{"responses": {MaxAge: time.Hour}}
	sink := newMemSink()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := handlers.Crawl(ctx, sp, handlers.Options{Sink: sink, Logger: zaptest.NewLogger(t),
		MaxBacklog: 20, Subscriber: streams.SubscriberConfig{BlockTime: testBlockTime}})
	if err != nil {
		t.Fatal(err)
	}
	if !st.Done {
		t.Fatalf("embedded crawl not done: %d items stored of 60 (the backlog gate held the fetchers)", st.ItemsStored)
	}
	wantAllPages(t, sink, base, 60)
	for _, s := range st.Streams {
		if s.Name == streams.NewKeys("embkeep").Responses && s.Length != 60 {
			t.Errorf("responses stream keeps %d entries, want all 60 (max_age 1h)", s.Length)
		}
	}
}
