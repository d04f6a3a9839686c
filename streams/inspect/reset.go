package inspect

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"
)

// Reset deletes every key of the crawl, in every partition (the per-host politeness and
// robots.txt keys included) and its runtime seeds. Stop the crawl's processes first:
// they keep in-process caches of what Redis had.
func Reset(ctx context.Context, rdb redis.UniversalClient, l streams.Layout) (int64, error) {
	keys := []string{l.Global.Seeds, l.Global.SeedsProcessing}
	seen := map[string]bool{}
	add := func(batch []string) error {
		for _, key := range batch {
			if !seen[key] {
				seen[key] = true
				keys = append(keys, key)
			}
		}
		return nil
	}
	parts := l.Parts
	if len(l.Parts) > 1 {
		parts = append([]streams.Keys{l.Global}, parts...)
	}
	for _, k := range parts {
		_ = add(k.All())
		if err := rkit.ScanKeys(ctx, rdb, k.Pattern, add); err != nil {
			return 0, fmt.Errorf("inspect: reset crawl %s: %w", l.Crawl, err)
		}
	}
	var n int64
	for _, key := range keys { // one by one: they live in several slots
		d, err := rdb.Del(ctx, key).Result()
		if err != nil {
			return n, fmt.Errorf("inspect: reset crawl %s: %w", l.Crawl, err)
		}
		n += d
	}
	return n, nil
}
