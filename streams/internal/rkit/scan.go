package rkit

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// ScanKeys calls fn with the keys matching pattern, in batches, on every primary (every
// master of a cluster, through a streams.Client too).
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
	if cc, ok := Cluster(rdb); ok {
		var mu sync.Mutex // ForEachMaster runs the primaries at once; fn is not safe for that
		locked := fn
		fn = func(keys []string) error { mu.Lock(); defer mu.Unlock(); return locked(keys) }
		return cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return scan(ctx, c) })
	}
	return scan(ctx, rdb)
}

// Cluster returns the Redis Cluster client rdb is, or wraps (streams.Client, which
// has an Unwrap method); false for one Redis, Sentinel or the embedded one. Code that
// must reach every master (a SCAN, INFO per shard) looks through the wrapper with it:
// a cluster client's own keyless commands reach one master only.
func Cluster(rdb redis.UniversalClient) (*redis.ClusterClient, bool) {
	if w, ok := rdb.(interface{ Unwrap() redis.UniversalClient }); ok {
		rdb = w.Unwrap()
	}
	cc, ok := rdb.(*redis.ClusterClient)
	return cc, ok
}
