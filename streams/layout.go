package streams

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// maxPartitions bounds a crawl's partitions.
const maxPartitions = 1024

// Layout is where a crawl's keys live. A crawl has P partitions; each has its own
// frontier, streams, dedup, delayed set and politeness state under the hash tag
// {<crawl>:<p>} (or {<crawl>} when P is 1), and every request belongs to the partition
// of its host, so every Lua script touches one slot and a Redis Cluster spreads the
// partitions over its masters. The crawl-wide keys (meta, counters) live under
// {<crawl>}. A crawl keeps the P it started with (stored in its meta hash).
type Layout struct {
	// Crawl is the crawl name.
	Crawl string
	// Global are the crawl-wide keys (Meta, Stats, HostStats, Dicts). With one partition
	// they are the partition's keys.
	Global Keys
	// Parts are the keys of every partition, in order (one or more).
	Parts []Keys
	// Summed names the keys of every partition at once, for figures summed over them:
	// sc:{shop:*}:requests (the partition's own with one partition).
	Summed Keys
	// Epoch names this life of the crawl: a random value stored in its meta hash when it
	// was created, as OpenLayout or ReadLayout read it ("" when none was stored). A crawl
	// whose stored epoch is gone or another has lost its state (see StateWatch.Check).
	Epoch string
}

// NewLayout returns the layout of crawl with p partitions (p < 1 means 1), each under
// the hash tag that spreads the partitions evenly over a cluster's slots (spreadTag).
// OpenLayout and ReadLayout give a crawl created before the tags were spread its own
// tags, {<crawl>:<p>}.
func NewLayout(crawl string, p int) Layout { return newLayout(crawl, p, true) }

// newLayout returns the layout of crawl with p partitions, their tags spread over the
// slots (spreadTag) or <crawl>:<i> (a crawl created before: metaTags not set).
func newLayout(crawl string, p int, spread bool) Layout {
	p = max(p, 1)
	l := Layout{Crawl: crawl, Global: NewKeys(crawl), Parts: make([]Keys, p)}
	if p == 1 {
		l.Parts[0], l.Summed = l.Global, l.Global
		return l
	}
	l.Summed = newKeys(crawl, crawl+":*")
	var tags []string
	if spread {
		tags = spreadTags(crawl, p)
	}
	for i := range l.Parts {
		tag := crawl + ":" + strconv.Itoa(i)
		if spread {
			tag = tags[i]
		}
		l.Parts[i] = newKeys(crawl, tag)
	}
	return l
}

// metaTags is the meta hash field that says how a crawl's partitions are tagged:
// "spread" (spreadTag) for a crawl created since; absent for one created before, whose
// partitions are {<crawl>:<i>}.
const metaTags = "tags"

// PartitionOf returns the partition of a host ("name" or "name:port", as in a URL):
// FNV-1a of the host lower-cased, without an http/https default port, mixed with
// MurmurHash3's finalizer (FNV alone spreads names that differ in their last digits,
// such as ports, poorly over a few partitions). A stored crawl depends on it: never
// change it.
func (l Layout) PartitionOf(host string) int {
	if len(l.Parts) == 1 {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(normalHost(host)))
	x := h.Sum32()
	x ^= x >> 16
	x *= 0x85ebca6b
	x ^= x >> 13
	x *= 0xc2b2ae35
	x ^= x >> 16
	return int(x % uint32(len(l.Parts)))
}

// ForHost returns the keys of the partition of host.
func (l Layout) ForHost(host string) Keys { return l.Parts[l.PartitionOf(host)] }

// normalHost is the one name of a host ("name" or "name:port", as in a URL) that the
// crawl uses everywhere: partition, host queue, schedule, leases, limit rules and
// robots.txt cache. It lower-cases host and drops a port 80 or 443, so that
// Shop.example:80 and shop.example are one host.
func normalHost(host string) string {
	host = strings.ToLower(host)
	if h, port, err := net.SplitHostPort(host); err == nil && (port == "80" || port == "443") {
		if strings.Contains(h, ":") {
			return "[" + h + "]"
		}
		return h
	}
	return host
}

// openLayoutScript stores the crawl's partition count and epoch unless they are there,
// and returns the stored ones. The epoch is written when the crawl is created (a crawl
// created before epochs gets one at its next open).
//
// KEYS[1] -> sc:{c}:meta
// ARGV[1] -> partitions wanted, ARGV[2] -> a new epoch
// Output: {the stored partitions, the stored epoch, the stored tags ("spread" for a
// crawl created with spread partition tags, see metaTags; "" for one created before)}
var openLayoutScript = redis.NewScript(`
local cur = redis.call('HGET', KEYS[1], 'partitions')
if not cur then
  redis.call('HSET', KEYS[1], 'partitions', ARGV[1], 'tags', 'spread') -- metaTags
  cur = ARGV[1]
end
redis.call('HSETNX', KEYS[1], 'epoch', ARGV[2])
local v = redis.call('HMGET', KEYS[1], 'epoch', 'tags')
return {tonumber(cur), v[1], v[2] or ''}
`)

// OpenLayout returns the crawl's layout, creating the crawl when it does not exist. The
// first process to open a crawl stores want (≥ 1) in its meta hash, and a random epoch
// that names this life of the crawl (see StateWatch.Check); later ones, whatever they want, get
// the stored count, because moving a running crawl's keys between partitions would lose
// them, and the stored epoch. stored reports whether the count differed from want
// (callers warn). Reset the crawl to change it.
func OpenLayout(ctx context.Context, rdb redis.UniversalClient, crawl string, want int) (l Layout, differs bool, err error) {
	if crawl == "" {
		return Layout{}, false, errors.New("frontier: layout needs a crawl name")
	}
	if want < 1 || want > maxPartitions {
		return Layout{}, false, fmt.Errorf("frontier: partitions must be 1 to %d, got %d", maxPartitions, want)
	}
	res, err := openLayoutScript.Run(ctx, rdb, []string{NewKeys(crawl).Meta}, want, newEpoch()).Slice()
	if err == nil && len(res) != 3 {
		err = fmt.Errorf("%d replies", len(res))
	}
	if err != nil {
		return Layout{}, false, fmt.Errorf("frontier: store partitions of crawl %s: %w", crawl, err)
	}
	n64, _ := res[0].(int64)
	n := int(n64)
	if n < 1 || n > maxPartitions {
		return Layout{}, false, fmt.Errorf("frontier: crawl %s has %d partitions stored, want 1 to %d", crawl, n, maxPartitions)
	}
	tags, _ := res[2].(string)
	l = newLayout(crawl, n, tags == "spread")
	l.Epoch, _ = res[1].(string)
	return l, n != want, nil
}

// ReadLayout returns the layout of an existing crawl (its stored partition count, 1
// when none is stored, and its epoch, "" when none is), for tools that only read or
// clear a crawl.
func ReadLayout(ctx context.Context, rdb redis.UniversalClient, crawl string) (Layout, error) {
	if crawl == "" {
		return Layout{}, errors.New("frontier: layout needs a crawl name")
	}
	vals, err := rdb.HMGet(ctx, NewKeys(crawl).Meta, "partitions", metaEpoch, metaTags).Result()
	if err != nil {
		return Layout{}, fmt.Errorf("frontier: read partitions of crawl %s: %w", crawl, err)
	}
	n := 1
	if s, ok := vals[0].(string); ok {
		if n, err = strconv.Atoi(s); err != nil || n < 1 || n > maxPartitions {
			return Layout{}, fmt.Errorf("frontier: crawl %s has %q partitions stored, want 1 to %d", crawl, s, maxPartitions)
		}
	}
	tags, _ := vals[2].(string)
	l := newLayout(crawl, n, tags == "spread")
	l.Epoch, _ = vals[1].(string)
	return l, nil
}

// deadOf returns the dead-letter stream of the partition a stream of the crawl belongs
// to (sc:{tag}:requests -> sc:{tag}:dead).
func deadOf(stream string) string {
	if i := strings.Index(stream, "}:"); i >= 0 {
		return stream[:i+2] + "dead"
	}
	return stream + ":dead"
}
