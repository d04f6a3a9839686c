package dedup

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"
)

// Usage is what a crawl's dedup holds in Redis.
type Usage struct {
	// Keys is how many keys the dedup uses.
	Keys int64
	// Bytes is the sum of MEMORY USAGE of those keys (exact: SAMPLES 0); 0 when the
	// server has no MEMORY USAGE (the embedded Redis).
	Bytes int64
	// URLs is how many fingerprints were recorded; -1 when Redis cannot tell (RedisBloom).
	URLs int64
}

// Usage scans the crawl's dedup keys (every partition's) and sums their memory and
// contents. It costs two commands per key (pipelined): exact mode has up to
// 2^BucketBits keys per partition, so call it for `status --deep` and benchmarks, not in
// a loop. It pauses usagePause after each batch of a thousand keys, so that Redis
// serves the crawl's own commands in between.
func (d *Deduper) Usage(ctx context.Context) (Usage, error) {
	var sum Usage
	for i := range len(d.layout.Parts) {
		u, err := d.part(i).usage(ctx)
		if err != nil {
			return Usage{}, err
		}
		sum.Keys, sum.Bytes = sum.Keys+u.Keys, sum.Bytes+u.Bytes
		if u.URLs < 0 || sum.URLs < 0 {
			sum.URLs = -1
		} else {
			sum.URLs += u.URLs
		}
	}
	return sum, nil
}

// usagePause is how long Usage waits between two batches of keys.
const usagePause = 5 * time.Millisecond

// usage is Usage of the Deduper's partition.
func (d *Deduper) usage(ctx context.Context) (Usage, error) {
	var u Usage
	var bloomN, bloomC int64
	err := rkit.ScanKeys(ctx, d.rdb, seenPattern(d.keys), func(keys []string) error {
		p := d.rdb.Pipeline()
		mem := make([]*redis.IntCmd, len(keys))
		cnt := make([]*redis.IntCmd, len(keys))
		var state *redis.SliceCmd
		for i, k := range keys {
			mem[i] = p.MemoryUsage(ctx, k, 0)
			switch {
			case k == d.keys.Seen:
				cnt[i] = p.SCard(ctx, k)
			case d.rec.Mode == Exact && k != gensKey(d.keys):
				cnt[i] = p.HLen(ctx, k)
			case k == bloomKey(d.keys):
				state = p.HMGet(ctx, k, "n", "c")
			}
		}
		_, _ = p.Exec(ctx) // errors are looked at command by command
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(usagePause):
		}
		for i := range keys {
			u.Keys++
			u.Bytes += mem[i].Val() // 0 when the server has no MEMORY USAGE (miniredis)
			if cnt[i] != nil {
				if err := cnt[i].Err(); err != nil {
					return err
				}
				u.URLs += cnt[i].Val()
			}
		}
		if state != nil {
			if err := state.Err(); err != nil {
				return err
			}
			v := state.Val()
			bloomN, bloomC = anyInt(v[0]), anyInt(v[1])
		}
		return nil
	})
	if err != nil {
		return Usage{}, fmt.Errorf("dedup: dedup usage of crawl %s: %w", d.keys.Crawl, err)
	}
	switch {
	case d.rec.Mode == Bloom && (d.rec.Native || d.rec.ExpireAfter > 0): // not counted per generation
		u.URLs = -1
	case d.rec.Mode == Bloom:
		levels := bloomLevels(d.rec.Capacity, d.rec.ErrorRate)
		for i := int64(0); i+1 < bloomN && int(i) < len(levels); i++ {
			u.URLs += levels[i].Cap
		}
		u.URLs += bloomC
	}
	return u, nil
}

// Delete deletes every dedup key of the crawl (any mode) and returns how many it
// deleted. It leaves the stored config in the meta hash (Reset deletes that).
func Delete(ctx context.Context, rdb redis.UniversalClient, keys streams.Keys) (int64, error) {
	var n int64
	err := rkit.ScanKeys(ctx, rdb, seenPattern(keys), func(batch []string) error {
		d, err := rdb.Unlink(ctx, batch...).Result()
		n += d
		return err
	})
	if err != nil {
		return n, fmt.Errorf("dedup: delete seen keys of crawl %s: %w", keys.Crawl, err)
	}
	return n, nil
}

func anyInt(v any) int64 {
	var n int64
	if s, ok := v.(string); ok {
		_, _ = fmt.Sscan(s, &n)
	}
	return n
}
