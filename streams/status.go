package streams

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// GroupStatus is one consumer group of a stream.
type GroupStatus struct {
	Name          string `json:"name"`
	Pending       int64  `json:"pending"`
	Lag           int64  `json:"lag"` // -1 when Redis cannot tell
	Consumers     int64  `json:"consumers"`
	LastDelivered string `json:"last_delivered"`
}

// StreamStatus is one stream of the crawl.
type StreamStatus struct {
	Name   string        `json:"name"`
	Length int64         `json:"length"`
	Bytes  int64         `json:"bytes"`
	Groups []GroupStatus `json:"groups"`
}

// Status is what `streamcrawl status` shows.
type Status struct {
	Crawl       string           `json:"crawl"`
	Streams     []StreamStatus   `json:"streams"`
	Frontier    int64            `json:"frontier"` // requests waiting in the frontier ZSET
	Queued      int64            `json:"queued"`   // requests in the stream, not yet read by a fetcher
	Delayed     int64            `json:"delayed"`  // requests waiting for a retry time
	Seen        int64            `json:"seen"`
	SeenBytes   int64            `json:"seen_bytes"`
	DeadLetters int64            `json:"dead_letters"`
	ItemsStored int64            `json:"items_stored"`
	Stats       map[string]int64 `json:"stats"`
	Done        bool             `json:"done"`
	// Memory is Redis memory (MEMORY USAGE) by key family: streams (requests, responses,
	// dead letters), items (the items stream), frontier (frontier and delayed ZSETs),
	// dedup (seen URLs and item keys).
	Memory map[string]int64 `json:"memory"`
}

// ReadStatus collects the crawl's status.
func ReadStatus(ctx context.Context, rdb redis.UniversalClient, k Keys) (*Status, error) {
	st := &Status{Crawl: k.Crawl(), Stats: map[string]int64{}}
	for _, sg := range append(k.Streams(), StreamGroup{Stream: k.Dead()}) {
		ss := StreamStatus{Name: sg.Stream}
		n, err := rdb.XLen(ctx, sg.Stream).Result()
		if err != nil {
			return nil, fmt.Errorf("streams: status of %s: %w", sg.Stream, err)
		}
		ss.Length = n
		ss.Bytes, _ = rdb.MemoryUsage(ctx, sg.Stream).Result()
		if n > 0 || sg.Group != "" {
			groups, err := rdb.XInfoGroups(ctx, sg.Stream).Result()
			if err != nil && !isNoSuchKey(err) {
				return nil, fmt.Errorf("streams: groups of %s: %w", sg.Stream, err)
			}
			for _, g := range groups {
				ss.Groups = append(ss.Groups, GroupStatus{Name: g.Name, Pending: g.Pending, Lag: g.Lag,
					Consumers: g.Consumers, LastDelivered: g.LastDeliveredID})
				if sg.Stream == k.Requests() && g.Name == StageFetch {
					st.Queued = g.Lag
				}
			}
		}
		if sg.Stream == k.Dead() {
			st.DeadLetters = n
		}
		st.Streams = append(st.Streams, ss)
	}
	if err := readSeen(ctx, rdb, k, st); err != nil {
		return nil, err
	}
	stats, err := rdb.HGetAll(ctx, k.Stats()).Result()
	if err != nil {
		return nil, fmt.Errorf("streams: stats: %w", err)
	}
	for f, v := range stats {
		st.Stats[f], _ = strconv.ParseInt(v, 10, 64)
	}
	st.ItemsStored = st.Stats["items_stored"]
	st.Memory = map[string]int64{}
	families := map[string][]string{
		"streams":  {k.Requests(), k.Responses(), k.Dead()},
		"items":    {k.Items()},
		"frontier": {k.Frontier(), k.Delayed()},
		"dedup":    {k.SeenAt(), k.ItemKeys()},
	}
	st.Memory["dedup"] = st.SeenBytes
	for fam, keys := range families {
		for _, key := range keys {
			n, _ := rdb.MemoryUsage(ctx, key).Result()
			st.Memory[fam] += n
		}
	}
	p, err := ReadProgress(ctx, rdb, k)
	if err != nil {
		return nil, err
	}
	st.Done = p.Done()
	st.Frontier, st.Delayed = p.Frontier, p.Delayed
	return st, nil
}

// Reset deletes every key of the crawl (the per-host politeness and robots.txt keys
// included) and its runtime seeds. Stop the crawl's processes first: they keep
// in-process caches of what Redis had.
func Reset(ctx context.Context, rdb redis.UniversalClient, k Keys) (int64, error) {
	keys := append(k.All(), SeedKey(k.Crawl()), SeedProcessingKey(k.Crawl()))
	iter := rdb.Scan(ctx, 0, k.key("*"), 1000).Iterator()
	seen := map[string]bool{}
	for _, key := range keys {
		seen[key] = true
	}
	for iter.Next(ctx) {
		if !seen[iter.Val()] {
			seen[iter.Val()] = true
			keys = append(keys, iter.Val())
		}
	}
	if err := iter.Err(); err != nil {
		return 0, fmt.Errorf("streams: reset crawl %s: %w", k.Crawl(), err)
	}
	var n int64
	for _, key := range keys { // one by one: the seed keys live in another slot
		d, err := rdb.Del(ctx, key).Result()
		if err != nil {
			return n, fmt.Errorf("streams: reset crawl %s: %w", k.Crawl(), err)
		}
		n += d
	}
	return n, nil
}

func isNoSuchKey(err error) bool {
	return err != nil && (err.Error() == "ERR no such key" || err.Error() == "ERR The XINFO subcommand requires the key to exist.")
}

// readSeen fills in how many URLs the crawl's dedup holds and its memory, through the
// crawl's stored dedup config (a plain set when it has none yet).
func readSeen(ctx context.Context, rdb redis.UniversalClient, k Keys, st *Status) error {
	raw, err := rdb.HGet(ctx, k.Meta(), "dedup").Result()
	if errNil(err) {
		st.Seen, err = rdb.SCard(ctx, k.Seen()).Result()
		if err != nil {
			return fmt.Errorf("streams: seen count: %w", err)
		}
		st.SeenBytes, _ = rdb.MemoryUsage(ctx, k.Seen()).Result()
		return nil
	}
	if err != nil {
		return fmt.Errorf("streams: dedup config: %w", err)
	}
	var rec dedupRecord
	if err := json.Unmarshal([]byte(raw), &rec); err != nil {
		return fmt.Errorf("streams: dedup config %q: %w", raw, err)
	}
	d, err := OpenDeduper(ctx, rdb, k, rec.DedupConfig, nil)
	if err != nil {
		return err
	}
	u, err := d.Usage(ctx)
	if err != nil {
		return err
	}
	st.Seen, st.SeenBytes = u.URLs, u.Bytes
	return nil
}
