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
// the crawl's partitions. It is read from counters the crawl keeps as it goes and a few
// O(1) commands per partition (about 30 for a crawl of one partition, pipelined), never
// by scanning keys, so looking at a crawl of any size costs the same.
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
	// HostsDue is the number of hosts that may start a request now: ready, or scheduled
	// no later than now (this machine's clock).
	HostsDue int64 `json:"hosts_due"`
	// HostsBlocked is the number of hosts with requests waiting and every slot taken
	// (per_host_concurrency requests in flight): each finish places one again. Read by
	// ReadBlockedHosts (status), not by ReadStatus: its cost follows the requests in
	// flight, and a scrape's must not.
	HostsBlocked int64 `json:"hosts_blocked"`
	// InFlight is the number of requests holding a slot of a host with a concurrency
	// limit (handed out, their fetch not finished).
	InFlight int64 `json:"in_flight"`
	// Queued is the number of requests in the stream not yet read by a fetcher (all of
	// them before any fetcher created its group).
	Queued int64 `json:"queued"`
	// Delayed is the number of requests waiting for a retry time.
	Delayed int64 `json:"delayed"`
	// Seen is how many URLs the dedup recorded (its counter; a crawl started by a
	// version without it counts from its first scan by `status --deep`).
	Seen int64 `json:"seen"`
	// SeenBytes is the dedup's memory as the last deep look measured it (see ReadDeep);
	// 0 when none did.
	SeenBytes int64 `json:"seen_bytes"`
	// Deep is the last deep look at the dedup, nil when none was made.
	Deep *Deep `json:"deep,omitempty"`
	// DeadLetters is the number of dead letters.
	DeadLetters int64 `json:"dead_letters"`
	// ItemsStored is the stats counter items_stored.
	ItemsStored int64 `json:"items_stored"`
	// Stats are the crawl's counters (pages fetched, items stored, drops by reason...).
	Stats map[string]int64 `json:"stats"`
	// Counts are the partitions' counters summed (see streams.Keys.Counts).
	Counts map[string]int64 `json:"counts"`
	// Done reports that the crawl is done (see Progress.Done).
	Done bool `json:"done"`
	// Revisits is the revisit schedule: scheduled, due now, in the next hour, overdue
	// (see ReadRevisits; all 0 when none is scheduled).
	Revisits RevisitCounts `json:"revisits"`
	// Continuous is the crawl's continuous mode (see Continuous).
	Continuous Continuous `json:"continuous"`
	// Failover is the first failover of Redis seen during the crawl while its writes
	// did not wait for replicas (durability async): when, and which replica took over
	// (streams.ReadFailover). Writes the old primary had acknowledged and not passed on
	// are lost: the crawl may be missing pages even when done. "" when none was seen.
	Failover string `json:"failover,omitempty"`
	// SeedError says why the start-URL key cannot be read (see frontier.ErrSeedKeyType).
	SeedError string `json:"seed_error,omitempty"`
	// Memory is Redis memory (MEMORY USAGE, sampled) by key family: streams (requests,
	// responses, dead letters), items (the items stream), frontier (ready set,
	// schedule, leases, back-offs, delayed retries and counters; not the host queues and
	// host states, one key per busy host), dedup (item keys, revisit times, and the seen
	// URLs as the last deep look measured them).
	Memory map[string]int64 `json:"memory"`
	// Partitions has one row per partition of a partitioned crawl (none for one).
	Partitions []PartitionStatus `json:"partitions,omitempty"`
	// Nodes has one row per master of a Redis Cluster (none for one Redis).
	Nodes []NodeStatus `json:"nodes,omitempty"`
	// Warnings are what the run that returned the status found wrong (most requests
	// dropped, the crawl already done: see handlers.Crawl); ReadStatus leaves it empty.
	Warnings []string `json:"warnings,omitempty"`
	// Render is what render: auto decided per page type, sorted by type (none without
	// it).
	Render []RenderStatus `json:"render,omitempty"`
	// Budget is the hosts (or domains) that used the most of the crawl's budget, most
	// first (readBudgets; none without a budget). Counts["dropped_budget"] counts the
	// requests dropped over it.
	Budget []BudgetUse `json:"budget,omitempty"`
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

// partRead is what ReadStatus asks of one partition, in one pipeline.
type partRead struct {
	k      streams.Keys
	stages []stage
	xlen   []*redis.IntCmd
	mem    []*redis.IntCmd
	groups []*redis.XInfoGroupsCmd
	counts *redis.MapStringStringCmd
	ready  *redis.IntCmd
	sched  *redis.IntCmd
	due    *redis.IntCmd
	leases *redis.IntCmd
	family map[string][]*redis.IntCmd
}

// ask adds partition k's reads to p.
func (r *partRead) ask(ctx context.Context, p redis.Pipeliner, now string) {
	k := r.k
	r.stages = append(stages(k), stage{Stream: k.Dead})
	for _, sg := range r.stages {
		r.xlen = append(r.xlen, p.XLen(ctx, sg.Stream))
		r.mem = append(r.mem, p.MemoryUsage(ctx, sg.Stream))
		var g *redis.XInfoGroupsCmd
		if sg.Group != "" {
			g = p.XInfoGroups(ctx, sg.Stream)
		}
		r.groups = append(r.groups, g)
	}
	r.counts = p.HGetAll(ctx, k.Counts)
	r.ready, r.sched = p.ZCard(ctx, k.Ready), p.ZCard(ctx, k.Sched)
	r.due, r.leases = p.ZCount(ctx, k.Sched, "-inf", now), p.ZCard(ctx, k.Leases)
	r.family = map[string][]*redis.IntCmd{}
	for fam, keys := range map[string][]string{
		"frontier": {k.Ready, k.Sched, k.Leases, k.Delayed, k.Backoff, k.Counts},
		"dedup":    {k.SeenAt, k.ItemKeys},
	} {
		for _, key := range keys {
			r.family[fam] = append(r.family[fam], p.MemoryUsage(ctx, key))
		}
	}
}

// add adds the partition's answers to st and returns its row.
func (r *partRead) add(st *Status) (PartitionStatus, error) {
	k := r.k
	ps := PartitionStatus{Tag: k.Tag}
	first := len(st.Streams) == 0
	for si, sg := range r.stages {
		ss := StreamStatus{Name: sg.Stream}
		n, err := r.xlen[si].Result()
		if err != nil {
			return ps, fmt.Errorf("inspect: status of %s: %w", sg.Stream, err)
		}
		ss.Length = n
		ss.Bytes = r.mem[si].Val() // 0 when absent or on the embedded Redis
		fetchGroup := false
		if g := r.groups[si]; g != nil {
			groups, err := g.Result()
			if err != nil && !rkit.IsNoSuchKey(err) {
				return ps, fmt.Errorf("inspect: groups of %s: %w", sg.Stream, err)
			}
			for _, g := range groups {
				ss.Groups = append(ss.Groups, GroupStatus{Name: g.Name, Pending: g.Pending, Lag: g.Lag,
					Consumers: g.Consumers, LastDelivered: g.LastDeliveredID})
				if sg.Stream == k.Requests && g.Name == streams.StageFetch {
					st.Queued += max(g.Lag, 0)
					fetchGroup = true
				}
			}
		}
		switch sg.Stream {
		case k.Dead:
			st.DeadLetters += n
			st.Memory["streams"] += ss.Bytes
		case k.Requests:
			ps.Requests = n
			if !fetchGroup {
				st.Queued += n // no fetcher has read any yet
			}
			st.Memory["streams"] += ss.Bytes
		case k.Responses:
			ps.Responses = n
			st.Memory["streams"] += ss.Bytes
		case k.Items:
			ps.Items = n
			st.Memory["items"] += ss.Bytes
		}
		ps.Bytes += ss.Bytes
		if first {
			st.Streams = append(st.Streams, ss)
		} else {
			st.Streams[si] = mergeStream(st.Streams[si], ss)
		}
	}
	for fam, cmds := range r.family {
		for _, c := range cmds {
			st.Memory[fam] += c.Val()
			ps.Bytes += c.Val()
		}
	}
	counts, err := r.counts.Result()
	if err != nil {
		return ps, fmt.Errorf("inspect: counters: %w", err)
	}
	for f, v := range counts {
		n, _ := strconv.ParseInt(v, 10, 64)
		st.Counts[f] += n
	}
	ps.Frontier, _ = strconv.ParseInt(counts["waiting"], 10, 64)
	ps.HostsReady, ps.HostsScheduled = r.ready.Val(), r.sched.Val()
	st.HostsDue += r.ready.Val() + r.due.Val()
	st.InFlight += r.leases.Val()
	for _, c := range []*redis.IntCmd{r.ready, r.sched, r.due, r.leases} {
		if err := c.Err(); err != nil {
			return ps, fmt.Errorf("inspect: frontier: %w", err)
		}
	}
	return ps, nil
}

// ReadStatus collects the crawl's status: one pipeline for every partition's streams,
// counters and frontier sets and the crawl-wide hashes, then the crawl's progress
// (ReadProgress).
func ReadStatus(ctx context.Context, rdb redis.UniversalClient, l streams.Layout) (*Status, error) {
	st := &Status{Crawl: l.Crawl, Stats: map[string]int64{}, Counts: map[string]int64{}, Memory: map[string]int64{}}
	reads := make([]*partRead, len(l.Parts))
	var meta, stats *redis.MapStringStringCmd
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error { // errors are read per command
		for i, k := range l.Parts {
			reads[i] = &partRead{k: k}
			reads[i].ask(ctx, p, now)
		}
		meta, stats = p.HGetAll(ctx, l.Global.Meta), p.HGetAll(ctx, l.Global.Stats)
		return nil
	})
	for i, r := range reads {
		ps, err := r.add(st)
		if err != nil {
			return nil, err
		}
		st.HostsReady += ps.HostsReady
		st.HostsScheduled += ps.HostsScheduled
		if len(l.Parts) > 1 {
			ps.Partition = i
			st.Partitions = append(st.Partitions, ps)
		}
	}
	m := meta.Val() // best effort: retention and the deep look are for people
	summed := append(stages(l.Summed), stage{Stream: l.Summed.Dead})
	for j := range st.Streams {
		st.Streams[j].Name = summed[j].Stream
		for _, kind := range []string{"requests", "responses", "items"} {
			if strings.HasSuffix(st.Streams[j].Name, ":"+kind) {
				st.Streams[j].Retention = m[rkit.RetentionField(kind)]
			}
		}
	}
	var err error
	if st.Failover, err = streams.ReadFailover(ctx, rdb, l); err != nil {
		return nil, err
	}
	st.Seen = st.Counts["seen"]
	if d := parseDeep(m[deepField]); d != nil {
		st.Deep, st.SeenBytes = d, d.SeenBytes
		st.Memory["dedup"] += d.SeenBytes
		if st.Seen < d.SeenURLs {
			st.Seen = d.SeenURLs // a crawl counted only since an upgrade
		}
	}
	sv, err := stats.Result()
	if err != nil {
		return nil, fmt.Errorf("inspect: stats: %w", err)
	}
	for f, v := range sv {
		st.Stats[f], _ = strconv.ParseInt(v, 10, 64)
	}
	st.ItemsStored = st.Stats["items_stored"]
	p, err := ReadProgress(ctx, rdb, l)
	if err != nil {
		return nil, err
	}
	st.Done = p.Done()
	st.SeedError = p.SeedError
	if st.Render, err = readRender(ctx, rdb, l); err != nil {
		return nil, err
	}
	if st.Budget, err = readBudgets(ctx, rdb, l); err != nil {
		return nil, err
	}
	st.Frontier, st.Delayed, st.Continuous = p.Frontier, p.Delayed, p.Continuous
	if p.Revisits > 0 { // one script per partition, O(minutes due within the hour)
		if st.Revisits, err = ReadRevisits(ctx, rdb, l, 0); err != nil {
			return nil, err
		}
	}
	if cc, ok := streams.AsCluster(rdb); ok {
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
	masters, err := PartitionMasters(ctx, cc, l)
	if err != nil {
		return nil, err
	}
	for j := range nodes {
		nodes[j].Partitions = masters[nodes[j].Addr]
	}
	return nodes, nil
}

// PartitionMasters returns which partitions of the crawl each master of a Redis Cluster
// holds, by address: every master, those holding none included (a partition's keys
// share one hash tag, so they live on one master).
func PartitionMasters(ctx context.Context, cc *redis.ClusterClient, l streams.Layout) (map[string][]int, error) {
	masters := map[string][]int{}
	var mu sync.Mutex
	err := cc.ForEachMaster(ctx, func(_ context.Context, c *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		masters[c.Options().Addr] = nil
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("inspect: masters of the cluster: %w", err)
	}
	for i, k := range l.Parts {
		c, err := cc.MasterForKey(ctx, k.Requests)
		if err != nil {
			return nil, fmt.Errorf("inspect: master of partition %d: %w", i, err)
		}
		addr := c.Options().Addr
		masters[addr] = append(masters[addr], i)
	}
	return masters, nil
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
