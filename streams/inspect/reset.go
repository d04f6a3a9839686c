package inspect

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"
)

// Reset deletes every key of the crawl, in every partition (the per-host politeness and
// robots.txt keys included) and its runtime seeds. It refuses, with an error that
// names them and matches ErrRunning, while services of the crawl are alive (Alive):
// wiping the state under running processes mixes two crawls in one (their in-process
// caches keep what Redis had) and loses pages.
func Reset(ctx context.Context, rdb redis.UniversalClient, l streams.Layout) (int64, error) {
	alive, err := Alive(ctx, rdb, l)
	if err != nil {
		return 0, fmt.Errorf("inspect: reset crawl %s: %w", l.Crawl, err)
	}
	if len(alive) > 0 {
		return 0, runningError(l.Crawl, alive)
	}
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
