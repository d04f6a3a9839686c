package main

import (
	"context"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// Redis figures of a benchmark on a Redis Cluster are the sum over its masters: a
// command to a cluster client goes to one node, so one INFO would see one shard.

// eachShard calls read with every master of a cluster, or with rdb itself, and returns
// the answers by the node's address ("" for a single server).
func eachShard[T any](ctx context.Context, rdb redis.UniversalClient, read func(context.Context, redis.Cmdable) (T, error)) map[string]T {
	out := map[string]T{}
	cc, ok := streams.AsCluster(rdb)
	if !ok {
		if v, err := read(ctx, rdb); err == nil {
			out[""] = v
		}
		return out
	}
	var mu sync.Mutex
	_ = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		v, err := read(ctx, c)
		if err == nil {
			mu.Lock()
			out[c.Options().Addr] = v
			mu.Unlock()
		}
		return nil // a node that does not answer leaves its figures out
	})
	return out
}

// sumShards adds up the numbers of every shard.
func sumShards(shards map[string]map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for _, m := range shards {
		for k, v := range m {
			out[k] += v
		}
	}
	return out
}

// shardInfo returns the numbers of INFO cpu, stats and memory of each shard.
func shardInfo(ctx context.Context, rdb redis.UniversalClient) map[string]map[string]float64 {
	return eachShard(ctx, rdb, func(ctx context.Context, c redis.Cmdable) (map[string]float64, error) {
		return inspect.InfoNumbers(ctx, c, "cpu", "stats", "memory")
	})
}

// shardCPU returns each shard's CPU seconds (user + system) between two shardInfo.
func shardCPU(before, after map[string]map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for addr, a := range after {
		b := before[addr]
		out[addr] = (a["used_cpu_user"] + a["used_cpu_sys"]) - (b["used_cpu_user"] + b["used_cpu_sys"])
	}
	return out
}

// usecSuffix marks, in a map of calls by command (parseCommandStats), the entry that
// holds a command's microseconds instead: "xadd" calls, "xadd µs" its time. The time is
// the server's wall time in the command, and a script's includes the commands it runs.
const usecSuffix = " µs"

// parseCommandStats returns the calls and the microseconds (keys ending in usecSuffix)
// by command of an INFO commandstats answer.
func parseCommandStats(raw string) map[string]float64 {
	out := map[string]float64{}
	for _, l := range strings.Split(raw, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(l), ":calls=")
		if !ok {
			continue
		}
		name = strings.TrimPrefix(name, "cmdstat_")
		n, rest, _ := strings.Cut(rest, ",")
		v, _ := strconv.ParseFloat(n, 64)
		out[name] = v
		if u, ok := strings.CutPrefix(rest, "usec="); ok {
			u, _, _ = strings.Cut(u, ",")
			us, _ := strconv.ParseFloat(u, 64)
			out[name+usecSuffix] = us
		}
	}
	return out
}
