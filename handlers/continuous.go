package handlers

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// recordContinuous records mode as the crawl's continuous mode (Options.Continuous);
// nil leaves the crawl's as it is. Crawl records it before it looks whether the crawl
// is already done, and every run when it opens.
func recordContinuous(ctx context.Context, rdb redis.UniversalClient, l streams.Layout, mode *inspect.Continuous) error {
	if mode == nil {
		return nil
	}
	return inspect.SetContinuous(ctx, rdb, l, *mode)
}
