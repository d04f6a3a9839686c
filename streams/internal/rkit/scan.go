package rkit

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// ScanKeys calls fn with the keys matching pattern, in batches, on every primary.
func ScanKeys(ctx context.Context, rdb redis.UniversalClient, pattern string, fn func([]string) error) error {
	scan := func(ctx context.Context, c redis.UniversalClient) error {
		var cursor uint64
		for {
			keys, next, err := c.Scan(ctx, cursor, pattern, 1000).Result()
			if err != nil {
				return err
			}
			if len(keys) > 0 {
				if err := fn(keys); err != nil {
					return err
				}
			}
			if cursor = next; cursor == 0 {
				return nil
			}
		}
	}
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		var mu sync.Mutex // ForEachMaster runs the primaries at once; fn is not safe for that
		locked := fn
		fn = func(keys []string) error { mu.Lock(); defer mu.Unlock(); return locked(keys) }
		return cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return scan(ctx, c) })
	}
	return scan(ctx, rdb)
}
