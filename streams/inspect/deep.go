package inspect

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/dedup"
	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"
)

// deepEvery is how often a crawl's dedup is scanned at most: a deep look within it of
// the last gets that one's result.
const deepEvery = time.Minute

// deepField is the meta hash field that keeps the last deep look (JSON).
const deepField = "deep"

// Deep is what a deep look at a crawl's dedup measured (ReadDeep): exact figures that
// cost a scan of its keys, two commands per key (126,000 keys for 500,000 URLs in exact
// mode), which is why status does not read them otherwise.
type Deep struct {
	// At is when the scan ran.
	At time.Time `json:"at"`
	// SeenURLs is how many fingerprints the dedup holds (-1 when Redis cannot tell:
	// RedisBloom).
	SeenURLs int64 `json:"seen_urls"`
	// SeenBytes is their memory (MEMORY USAGE of every key, exact).
	SeenBytes int64 `json:"seen_bytes"`
	// SeenKeys is how many keys they take.
	SeenKeys int64 `json:"seen_keys"`
	// Cached is set when the result is an earlier scan's (one ran within the last minute).
	Cached bool `json:"cached,omitempty"`
}

// parseDeep reads a stored deep look, nil when there is none (or it is unreadable).
func parseDeep(v string) *Deep {
	if v == "" {
		return nil
	}
	var d Deep
	if json.Unmarshal([]byte(v), &d) != nil {
		return nil
	}
	return &d
}

// ReadDeep scans the crawl's dedup (every partition's keys; paced, so that Redis keeps
// serving the crawl meanwhile) and records the result in its meta hash, where ReadStatus
// shows it. Rate-limited: within a minute of the last scan it returns that one's result
// (Cached) without scanning. A crawl with no dedup config yet (nothing seeded) keeps its
// seen URLs in a plain set.
func ReadDeep(ctx context.Context, rdb redis.UniversalClient, l streams.Layout) (*Deep, error) {
	meta := l.Global.Meta
	vals, err := rdb.HMGet(ctx, meta, deepField, "dedup").Result()
	if err != nil {
		return nil, fmt.Errorf("inspect: deep look: %w", err)
	}
	last, _ := vals[0].(string)
	if d := parseDeep(last); d != nil && time.Since(d.At) < deepEvery {
		d.Cached = true
		return d, nil
	}
	d := &Deep{At: time.Now().UTC()}
	if vals[1] == nil {
		for _, k := range l.Parts {
			n, err := rdb.SCard(ctx, k.Seen).Result()
			if err != nil && !rkit.ErrNil(err) {
				return nil, fmt.Errorf("inspect: seen count: %w", err)
			}
			b, _ := rdb.MemoryUsage(ctx, k.Seen, 0).Result()
			d.SeenURLs, d.SeenBytes = d.SeenURLs+n, d.SeenBytes+b
			if n > 0 {
				d.SeenKeys++
			}
		}
	} else {
		dd, err := dedup.Open(ctx, rdb, l, dedup.Config{}, nil) // the stored config, which exists
		if err != nil {
			return nil, err
		}
		u, err := dd.Usage(ctx)
		if err != nil {
			return nil, err
		}
		d.SeenURLs, d.SeenBytes, d.SeenKeys = u.URLs, u.Bytes, u.Keys
	}
	b, _ := json.Marshal(d)
	if err := rdb.HSet(ctx, meta, deepField, b).Err(); err != nil {
		return nil, fmt.Errorf("inspect: record deep look: %w", err)
	}
	return d, nil
}
