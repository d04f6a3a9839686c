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
	keys, err := crawlKeys(ctx, rdb, l)
	if err != nil {
		return 0, fmt.Errorf("inspect: reset crawl %s: %w", l.Crawl, err)
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

// crawlKeys returns the names of every key Reset deletes: those the crawl's partitions
// name (some may not exist) and those a scan of each partition's pattern finds.
func crawlKeys(ctx context.Context, rdb redis.UniversalClient, l streams.Layout) ([]string, error) {
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
			return nil, err
		}
	}
	return keys, nil
}

// CountKeys returns how many keys of the crawl exist: what Reset would delete now. It
// scans the key space as Reset does (for a question put to a person before a delete,
// never a path a crawl runs on).
func CountKeys(ctx context.Context, rdb redis.UniversalClient, l streams.Layout) (int64, error) {
	keys, err := crawlKeys(ctx, rdb, l)
	if err != nil {
		return 0, fmt.Errorf("inspect: count keys of crawl %s: %w", l.Crawl, err)
	}
	cmds := make([]*redis.IntCmd, len(keys))
	_, err = rdb.Pipelined(ctx, func(p redis.Pipeliner) error { // one EXISTS a key: they live in several slots
		for i, key := range keys {
			cmds[i] = p.Exists(ctx, key)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("inspect: count keys of crawl %s: %w", l.Crawl, err)
	}
	var n int64
	for _, c := range cmds {
		n += c.Val()
	}
	return n, nil
}
