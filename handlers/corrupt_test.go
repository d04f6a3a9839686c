package handlers_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestKeyOfTheWrongTypeStopsTheCrawl: a key of the crawl that holds another type than
// the crawl keeps there (a string where the stats hash, the partition's counters
// hash or the ready and scheduled sets of hosts should be) stops the crawl with an error naming the key, where
// every stage retried the failing command every few seconds forever.
func TestKeyOfTheWrongTypeStopsTheCrawl(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	base := serve(t, newChainSite(20, 0))
	for name, key := range map[string]func(streams.Keys) string{
		"ready":  func(k streams.Keys) string { return k.Ready },
		"sched":  func(k streams.Keys) string { return k.Sched },
		"stats":  func(k streams.Keys) string { return k.Stats },
		"counts": func(k streams.Keys) string { return k.Counts },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel() // one crawl name each on the shared server
			sp := titleSpider("wrongtype"+name, base)
			var corrupted string
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			_, err := handlers.Crawl(ctx, sp, handlers.Options{Redis: srv.URL(), Sink: newMemSink(), Logger: zaptest.NewLogger(t),
				Started: func(ctx context.Context, rdb *streams.Client, l streams.Layout) func() {
					corrupted = key(l.Parts[0])
					if err := rdb.Set(ctx, corrupted, "not what the crawl keeps here", 0).Err(); err != nil {
						t.Error(err)
					}
					return func() {}
				}})
			if !errors.Is(err, handlers.ErrCorruptState) || !strings.Contains(err.Error(), corrupted) {
				t.Fatalf("crawl with %s a string: %v; want ErrCorruptState naming %s", corrupted, err, corrupted)
			}
			if ctx.Err() != nil {
				t.Errorf("the crawl ran until its context ended (%v) before it stopped", ctx.Err())
			}
		})
	}
}
