package inspect

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"

	"github.com/streamcrawl/streamcrawl/streams/dedup"
	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"

	"github.com/redis/go-redis/v9"
)

// GroupStatus is one consumer group of a stream.
type GroupStatus struct {
	// Name is the group's name.
	Name string `json:"name"`
	// Pending is how many entries its consumers hold without an ack.
	Pending int64 `json:"pending"`
	// Lag is how many entries it has not read; -1 when Redis cannot tell.
	Lag int64 `json:"lag"`
	// Consumers is how many consumers it has (the most of one partition's).
	Consumers int64 `json:"consumers"`
	// LastDelivered is the ID of the last entry delivered to it ("" summed over
	// partitions).
	LastDelivered string `json:"last_delivered"`
}

// StreamStatus is one stream of the crawl.
type StreamStatus struct {
	// Name is the stream's key (sc:{<crawl>:*}:<kind> summed over partitions).
	Name string `json:"name"`
	// Length is how many entries it holds.
	Length int64 `json:"length"`
	// Bytes is its memory (MEMORY USAGE; 0 on the embedded Redis).
	Bytes int64 `json:"bytes"`
	// Groups are the consumer groups reading it.
	Groups []GroupStatus `json:"groups"`
	// Retention is what the stream keeps once acked, as its trimmers last recorded it
	// ("max_age=10m0s max_bytes=64MB", "until acked"); empty when unknown.
	Retention string `json:"retention,omitempty"`
}

// Status is what `streamcrawl status` shows. Streams, counts and memory are summed over
// the crawl's partitions.
type Status struct {
	// Crawl is the crawl's name.
	Crawl string `json:"crawl"`
	// Streams are the requests, responses, items and dead-letter streams.
	Streams []StreamStatus `json:"streams"`
	// Frontier is the number of requests waiting in host queues.
	Frontier int64 `json:"frontier"`
	// HostsReady is the number of hosts that may start a request now and have one
	// waiting.
	HostsReady int64 `json:"hosts_ready"`
	// HostsScheduled is the number of hosts waiting for their delay or back-off.
	HostsScheduled int64 `json:"hosts_scheduled"`
	// HostsBlocked is the number of hosts with requests waiting and every slot taken
	// (per_host_concurrency requests in flight): each finish places one again.
	HostsBlocked int64 `json:"hosts_blocked"`
	// Queued is the number of requests in the stream not yet read by a fetcher.
	Queued int64 `json:"queued"`
	// Delayed is the number of requests waiting for a retry time.
	Delayed int64 `json:"delayed"`
	// Seen is how many URLs the dedup holds (-1 when it cannot tell: RedisBloom).
	Seen int64 `json:"seen"`
	// SeenBytes is the dedup's memory.
	SeenBytes int64 `json:"seen_bytes"`
	// DeadLetters is the number of dead letters.
	DeadLetters int64 `json:"dead_letters"`
	// ItemsStored is the stats counter items_stored.
	ItemsStored int64 `json:"items_stored"`
	// Stats are the crawl's counters (pages fetched, items stored, drops by reason...).
	Stats map[string]int64 `json:"stats"`
	// Done reports that the crawl is done (see ReadProgress).
	Done bool `json:"done"`
	// SeedError says why the start-URL key cannot be read (see frontier.ErrSeedKeyType).
	SeedError string `json:"seed_error,omitempty"`
	// Memory is Redis memory (MEMORY USAGE) by key family: streams (requests, responses,
	// dead letters), items (the items stream), frontier (host schedule, leases, host state and the
	// delayed ZSET; the host queues are not counted, see Frontier),
	// dedup (seen URLs and item keys).
	Memory map[string]int64 `json:"memory"`
	// Partitions has one row per partition of a partitioned crawl (none for one).
	Partitions []PartitionStatus `json:"partitions,omitempty"`
	// Nodes has one row per master of a Redis Cluster (none for one Redis).
	Nodes []NodeStatus `json:"nodes,omitempty"`
	// Warnings are what the run that returned the status found wrong (most requests
	// dropped, the crawl already done: see handlers.Crawl); ReadStatus leaves it empty.
	Warnings []string `json:"warnings,omitempty"`
	// Render is what render: auto decided per page type (none without it).
	Render []RenderStatus `json:"render,omitempty"`
}

// NodeStatus is one master of a Redis Cluster: what it holds, all crawls together.
type NodeStatus struct {
	// Addr is the master's address.
	Addr string `json:"addr"`
	// Keys is its DBSIZE.
	Keys int64 `json:"keys"`
	// UsedMemory is its INFO memory used_memory.
	UsedMemory int64 `json:"used_memory"`
	// Partitions are the crawl's partitions it serves.
	Partitions []int `json:"partitions,omitempty"`
}

// PartitionStatus is one partition of a crawl.
type PartitionStatus struct {
	// Partition is the partition's number.
	Partition int `json:"partition"`
	// Tag is its keys' hash tag.
	Tag string `json:"tag"`
	// Requests is the number of entries in its requests stream.
	Requests int64 `json:"requests"`
	// Responses is the number of entries in its responses stream.
	Responses int64 `json:"responses"`
	// Items is the number of entries in its items stream.
	Items int64 `json:"items"`
	// Frontier is the number of requests waiting in its host queues.
	Frontier int64 `json:"frontier"`
	// HostsReady: see Status.
	HostsReady int64 `json:"hosts_ready"`
	// HostsScheduled: see Status.
	HostsScheduled int64 `json:"hosts_scheduled"`
	// Bytes is the memory of its streams, frontier and item keys.
	Bytes int64 `json:"bytes"`
}

// ReadStatus collects the crawl's status.
func ReadStatus(ctx context.Context, rdb redis.UniversalClient, l streams.Layout) (*Status, error) {
	st := &Status{Crawl: l.Crawl, Stats: map[string]int64{}, Memory: map[string]int64{}}
	for i, k := range l.Parts {
		ps, err := readPartStatus(ctx, rdb, k, st)
		if err != nil {
			return nil, err
		}
		st.HostsReady += ps.HostsReady
		st.HostsScheduled += ps.HostsScheduled
		blocked, err := readBlockedHosts(ctx, rdb, k)
		if err != nil {
			return nil, err
		}
		st.HostsBlocked += blocked
		if len(l.Parts) > 1 {
			ps.Partition = i
			st.Partitions = append(st.Partitions, ps)
		}
	}
	meta, _ := rdb.HGetAll(ctx, l.Global.Meta).Result()              // best effort: retention is for people
	summed := append(stages(l.Summed), stage{Stream: l.Summed.Dead}) // as readPartStatus lists them
	for j := range st.Streams {
		st.Streams[j].Name = summed[j].Stream
		for _, kind := range []string{"requests", "responses", "items"} {
			if strings.HasSuffix(st.Streams[j].Name, ":"+kind) {
				st.Streams[j].Retention = meta[rkit.RetentionField(kind)]
			}
		}
	}
	if err := readSeen(ctx, rdb, l, st); err != nil {
		return nil, err
	}
	st.Memory["dedup"] += st.SeenBytes
	stats, err := rdb.HGetAll(ctx, l.Global.Stats).Result()
	if err != nil {
		return nil, fmt.Errorf("inspect: stats: %w", err)
	}
	for f, v := range stats {
		st.Stats[f], _ = strconv.ParseInt(v, 10, 64)
	}
	st.ItemsStored = st.Stats["items_stored"]
	p, err := ReadProgress(ctx, rdb, l)
	if err != nil {
		return nil, err
	}
	st.Done = p.Done()
	st.SeedError = p.SeedError
	if st.Render, err = ReadRender(ctx, rdb, l); err != nil {
		return nil, err
	}
	st.Frontier, st.Delayed = p.Frontier, p.Delayed
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		if st.Nodes, err = readNodes(ctx, cc, l); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// readNodes returns the keys and memory of each master of a Redis Cluster, and which
// of the crawl's partitions it serves, sorted by address.
func readNodes(ctx context.Context, cc *redis.ClusterClient, l streams.Layout) ([]NodeStatus, error) {
	var mu sync.Mutex
	var nodes []NodeStatus
	err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		n := NodeStatus{Addr: c.Options().Addr}
		var err error
		if n.Keys, err = c.DBSize(ctx).Result(); err != nil {
			return err
		}
		info, err := InfoNumbers(ctx, c, "memory")
		if err != nil {
			return err
		}
		n.UsedMemory = int64(info["used_memory"])
		mu.Lock()
		nodes = append(nodes, n)
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("inspect: cluster nodes: %w", err)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Addr < nodes[j].Addr })
	for i, k := range l.Parts {
		c, err := cc.MasterForKey(ctx, k.Requests)
		if err != nil {
			return nil, fmt.Errorf("inspect: master of partition %d: %w", i, err)
		}
		for j := range nodes {
			if nodes[j].Addr == c.Options().Addr {
				nodes[j].Partitions = append(nodes[j].Partitions, i)
			}
		}
	}
	return nodes, nil
}

// readPartStatus adds partition k's streams and memory to st and returns its row.
func readPartStatus(ctx context.Context, rdb redis.UniversalClient, k streams.Keys, st *Status) (PartitionStatus, error) {
	ps := PartitionStatus{Tag: k.Tag}
	first := len(st.Streams) == 0
	for si, sg := range append(stages(k), stage{Stream: k.Dead}) {
		ss := StreamStatus{Name: sg.Stream}
		n, err := rdb.XLen(ctx, sg.Stream).Result()
		if err != nil {
			return ps, fmt.Errorf("inspect: status of %s: %w", sg.Stream, err)
		}
		ss.Length = n
		ss.Bytes, _ = rdb.MemoryUsage(ctx, sg.Stream, 0).Result() // exact: what byte retention trims by
		if n > 0 || sg.Group != "" {
			groups, err := rdb.XInfoGroups(ctx, sg.Stream).Result()
			if err != nil && !rkit.IsNoSuchKey(err) {
				return ps, fmt.Errorf("inspect: groups of %s: %w", sg.Stream, err)
			}
			for _, g := range groups {
				ss.Groups = append(ss.Groups, GroupStatus{Name: g.Name, Pending: g.Pending, Lag: g.Lag,
					Consumers: g.Consumers, LastDelivered: g.LastDeliveredID})
				if sg.Stream == k.Requests && g.Name == streams.StageFetch {
					st.Queued += g.Lag
				}
			}
		}
		switch sg.Stream {
		case k.Dead:
			st.DeadLetters += n
		case k.Requests:
			ps.Requests = n
		case k.Responses:
			ps.Responses = n
		case k.Items:
			ps.Items = n
		}
		if first {
			st.Streams = append(st.Streams, ss)
		} else {
			st.Streams[si] = mergeStream(st.Streams[si], ss)
		}
	}
	families := map[string][]string{
		"streams":  {k.Requests, k.Responses, k.Dead},
		"items":    {k.Items},
		"frontier": {k.Waiting, k.Delayed, k.Ready, k.Sched, k.Leases, k.Hosts},
		"dedup":    {k.SeenAt, k.ItemKeys},
	}
	for fam, keys := range families {
		for _, key := range keys {
			n, _ := rdb.MemoryUsage(ctx, key).Result()
			st.Memory[fam] += n
			ps.Bytes += n
		}
	}
	var err error
	if ps.Frontier, err = rdb.HLen(ctx, k.Waiting).Result(); err != nil {
		return ps, fmt.Errorf("inspect: frontier size: %w", err)
	}
	if ps.HostsReady, err = rdb.ZCard(ctx, k.Ready).Result(); err != nil {
		return ps, fmt.Errorf("inspect: ready hosts: %w", err)
	}
	if ps.HostsScheduled, err = rdb.ZCard(ctx, k.Sched).Result(); err != nil {
		return ps, fmt.Errorf("inspect: scheduled hosts: %w", err)
	}
	return ps, nil
}

// mergeStream adds b (the same stream of another partition) to a.
func mergeStream(a, b StreamStatus) StreamStatus {
	a.Length += b.Length
	a.Bytes += b.Bytes
	for _, g := range b.Groups {
		found := false
		for i := range a.Groups {
			if a.Groups[i].Name == g.Name {
				found = true
				a.Groups[i].Pending += g.Pending
				if a.Groups[i].Lag >= 0 && g.Lag >= 0 {
					a.Groups[i].Lag += g.Lag
				} else {
					a.Groups[i].Lag = -1
				}
				a.Groups[i].Consumers = max(a.Groups[i].Consumers, g.Consumers)
				a.Groups[i].LastDelivered = "" // differs per partition
			}
		}
		if !found {
			a.Groups = append(a.Groups, g)
		}
	}
	return a
}

// readSeen fills in how many URLs the crawl's dedup holds and its memory, through the
// crawl's stored dedup config (a plain set when it has none yet).
func readSeen(ctx context.Context, rdb redis.UniversalClient, l streams.Layout, st *Status) error {
	k := l.Global
	_, err := rdb.HGet(ctx, k.Meta, "dedup").Result()
	if rkit.ErrNil(err) {
		st.Seen, err = rdb.SCard(ctx, k.Seen).Result()
		if err != nil {
			return fmt.Errorf("inspect: seen count: %w", err)
		}
		st.SeenBytes, _ = rdb.MemoryUsage(ctx, k.Seen).Result()
		return nil
	}
	if err != nil {
		return fmt.Errorf("inspect: dedup config: %w", err)
	}
	d, err := dedup.Open(ctx, rdb, l, dedup.Config{}, nil) // the stored config, which exists
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

// DueHosts returns how many hosts of the crawl may start a request by now: ready, or
// scheduled no later than now (by this machine's clock).
func DueHosts(ctx context.Context, rdb redis.UniversalClient, l streams.Layout, now time.Time) (int64, error) {
	parts := l.Parts
	cmds := make([][2]*redis.IntCmd, len(parts))
	at := strconv.FormatInt(now.UnixMilli(), 10)
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range parts {
			cmds[i] = [2]*redis.IntCmd{p.ZCard(ctx, k.Ready), p.ZCount(ctx, k.Sched, "-inf", at)}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("inspect: due hosts: %w", err)
	}
	var n int64
	for _, c := range cmds {
		n += c[0].Val() + c[1].Val()
	}
	return n, nil
}

// RecordedRetention returns the retention the crawl's stage processes recorded for a
// stream kind ("requests", "responses", "items") in its meta hash (streams.Trimmer.Meta);
// "until acked" when none did.
func RecordedRetention(ctx context.Context, rdb redis.UniversalClient, meta, kind string) (spiders.StreamRetention, error) {
	v, err := rdb.HGet(ctx, meta, rkit.RetentionField(kind)).Result()
	if rkit.ErrNil(err) {
		return spiders.StreamRetention{}, nil
	}
	if err != nil {
		return spiders.StreamRetention{}, fmt.Errorf("inspect: read retention: %w", err)
	}
	return spiders.ParseStreamRetention(v)
}
