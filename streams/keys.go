package streams

import (
	"strconv"
	"strings"
)

// Keys are the Redis keys of one partition of a crawl (see Layout), every key built
// here. They share one hash tag, {<crawl>} for a crawl of one partition or the
// crawl-wide keys, and {<crawl>:<p>} for partition p of a partitioned crawl, so every
// script touches one slot. The keys of one host, site or bucket come from the methods.
type Keys struct {
	// Crawl is the crawl name.
	Crawl string
	// Tag is the hash tag the keys share (without braces).
	Tag string

	// Requests is the stream of requests to fetch (read by group "fetch").
	Requests string
	// Responses is the stream of fetched responses (read by group "parse").
	Responses string
	// Items is the stream of scraped items (read by group "store" and post-processors).
	Items string
	// Dead is the dead-letter stream: entries that failed too often or could not be
	// decoded, invalid runtime seeds.
	Dead string

	// Waiting is the hash of the requests waiting in the partition's host queues, by the
	// ID their queue holds (its length is the frontier's size: "done" needs it at zero).
	Waiting string
	// HostQueues is what HostQueue puts before a host; the frontier's scripts build the
	// queue of a host they picked from the ready set or the schedule with it.
	HostQueues string
	// Ready is the ZSET of hosts that may start a request now and have some waiting,
	// scored by their best waiting request's band, then by turn (hosts of one band take
	// turns).
	Ready string
	// Sched is the ZSET of hosts that may not start a request before a time (their
	// delay or back-off), scored by that time in ms on the Redis clock.
	Sched string
	// Leases is the ZSET of requests handed to fetchers for hosts with a concurrency
	// limit: "<host>|<requests stream ID>" scored by when the slot is taken back if no
	// fetcher gave it back (ms, Redis clock).
	Leases string
	// Seq is a counter that orders requests within one score band and hosts within one
	// ready band.
	Seq string
	// Delayed is the ZSET of requests waiting for a time (retries), scored by due time
	// (ms, Redis clock); a due request goes back to its host's queue.
	Delayed string
	// Hosts is the hash of per-host state, fields "<host>:<x>" present only while they
	// differ from the defaults: f requests in flight, r politeness rule from the
	// spider's limits, c robots.txt Crawl-delay (ms), a AutoThrottle latency (ms), b
	// back-off level.
	Hosts string
	// LegacyFrontier is the ZSET of waiting requests of crawls started before host
	// queues (one ZSET per partition, members the encoded requests, scored band × 1e9 ±
	// order); frontier.Migrate empties it into the host queues.
	LegacyFrontier string

	// Seen is the base key of the request dedup (a set, or the prefix of the buckets and
	// filters of streams/dedup, which builds those keys from it).
	Seen string
	// SeenAt is the hash of request fingerprints to when they were queued, used instead
	// of Seen when the crawl revisits URLs.
	SeenAt string
	// ItemKeys is the set of item key fingerprints emitted (item dedup across pages and
	// redeliveries).
	ItemKeys string

	// Stats is a hash of crawl counters (pages fetched, items stored, drops by
	// reason...). Counters live in the crawl-wide keys (Layout.Global); a partition's own
	// hash holds what its scripts count (max_pages_used of a crawl of one partition).
	Stats string
	// HostStats is a hash of per-host fetch figures for the dashboard: "<host>|n"
	// requests, "<host>|ms" their total time in milliseconds, "<host>|err" failures
	// (network errors and 5xx); crawl-wide, in Layout.Global.
	HostStats string
	// Meta is a hash describing the crawl (spider name, when it was first seeded, its
	// dedup, partitions and retention); crawl-wide, in Layout.Global.
	Meta string
	// Dicts is the hash of the crawl's response dictionaries: field "current" holds the
	// ID of the one to compress new responses with, field <id> each dictionary (zstd
	// format). Crawl-wide, in Layout.Global.
	Dicts string
	// Login records the crawl's login step: "pending" while one fetcher logs in, "done"
	// after.
	Login string
	// Render is the hash of what render: auto learned per page type: fields
	// "<type>|mode" ("http" or "browser"; absent while learning), "<type>|samples" and
	// "<type>|same" (pages fetched both ways, and those where plain HTTP gave the same
	// items and links), "<type>|checks" and "<type>|diverged" (pages checked both ways
	// after an "http" decision). Crawl-wide, in Layout.Global.
	Render string

	// Seeds is where running services take start URLs from (crawl-wide, the same in
	// every partition's Keys): LPUSH a URL or a JSON request ({"url": ..., "meta":
	// {...}, "priority": N, ...}) to it, the scrapy-redis habit, SADD them when their
	// order does not matter, or ZADD them with a score (taken highest score first, like
	// scrapy-redis with REDIS_START_URLS_AS_ZSET). A key of any other type is an error
	// that stops the crawl with a message rather than hang it. It has no hash tag of its
	// own, so `LPUSH shop:start_urls URL` works as scrapy-redis users type it;
	// SeedsProcessing shares its slot.
	Seeds string
	// SeedsProcessing holds seeds taken from Seeds until they are in the frontier.
	SeedsProcessing string

	// Pattern matches every key of the partition (SCAN MATCH), host queues and
	// robots.txt included; for reset.
	Pattern string
}

// NewKeys returns the keys of a crawl of one partition (crawl is a name validated by
// spiders.ValidateName).
func NewKeys(crawl string) Keys { return newKeys(crawl, crawl) }

// newKeys returns the keys of crawl under hash tag tag.
func newKeys(crawl, tag string) Keys {
	key := func(suffix string) string { return "sc:{" + tag + "}:" + suffix }
	return Keys{Crawl: crawl, Tag: tag,
		Requests: key("requests"), Responses: key("responses"), Items: key("items"), Dead: key("dead"),
		Waiting: key("waiting"), HostQueues: key("hq:"), Ready: key("ready"), Sched: key("sched"),
		Leases: key("leases"), Seq: key("seq"), Delayed: key("delayed"), Hosts: key("hosts"),
		LegacyFrontier: key("frontier"),
		Seen:           key("seen"), SeenAt: key("seenat"), ItemKeys: key("itemkeys"),
		Stats: key("stats"), HostStats: key("hoststats"), Meta: key("meta"), Dicts: key("dicts"), Login: key("login"),
		Render: key("render"),
		Seeds:  crawl + ":start_urls", SeedsProcessing: "{" + crawl + ":start_urls}:processing",
		Pattern: key("*"),
	}
}

// key returns the key of the partition with suffix.
func (k Keys) key(suffix string) string { return "sc:{" + k.Tag + "}:" + suffix }

// HostQueue is the ZSET of one host's waiting requests (host: its key, spiders.HostKey):
// their IDs in Waiting, scored by the crawl's order: band, then order of discovery.
func (k Keys) HostQueue(host string) string { return k.HostQueues + host }

// Robots is the cached robots.txt of one host (expires after a day).
func (k Keys) Robots(host string) string { return k.key("robots:" + host) }

// RobotsLock is held by the one fetcher fetching a host's robots.txt.
func (k Keys) RobotsLock(host string) string { return k.key("robots-lock:" + host) }

// Cookies is the hash of one cookie session's cookies for one site (its registrable
// domain, "example.co.uk"), in the partition of the site (Layout.ForHost of it): field
// "<name>|<domain>|<path>", value "<url>\n<Set-Cookie>".
func (k Keys) Cookies(session, site string) string {
	return k.key("cookies:" + session + ":" + site)
}

// Validators is one bucket of what the last fetch of each URL answered, for
// conditional recrawls: small hashes (Redis keeps them as compact listpacks), field 8
// bytes of the URL's fingerprint, value "<etag>\n<last-modified, Unix seconds>".
func (k Keys) Validators(bucket uint32) string {
	return k.key("validators:" + strconv.FormatUint(uint64(bucket), 10))
}

// Input returns the stream a stage reads.
func (k Keys) Input(stage string) string {
	switch stage {
	case StageFetch:
		return k.Requests
	case StageParse:
		return k.Responses
	default:
		return k.Items
	}
}

// kindOf returns the kind of a stream of a crawl: the last part of its key (requests,
// responses, items).
func kindOf(stream string) string {
	if i := strings.LastIndexByte(stream, ':'); i >= 0 {
		return stream[i+1:]
	}
	return stream
}

// All returns the fixed keys of the partition (host queues and robots.txt aside), for
// reset.
func (k Keys) All() []string {
	return []string{k.Requests, k.Responses, k.Items, k.Dead, k.Delayed, k.Waiting, k.Ready, k.Sched, k.Leases,
		k.Seq, k.Seen, k.SeenAt, k.ItemKeys, k.Stats, k.Meta, k.Hosts}
}

// MetaPattern matches the meta hash of every crawl (and of partitions, which
// CrawlOfMeta tells apart), for listing the crawls a Redis holds (SCAN MATCH).
const MetaPattern = "sc:{*}:meta"

// CrawlOfMeta returns the crawl whose crawl-wide meta hash key is key, false for any
// other key (a partition's meta hash among them).
func CrawlOfMeta(key string) (string, bool) {
	tag, ok := strings.CutPrefix(key, "sc:{")
	if !ok {
		return "", false
	}
	tag, ok = strings.CutSuffix(tag, "}:meta")
	if !ok || tag == "" || strings.ContainsAny(tag, ":{}") {
		return "", false
	}
	return tag, true
}
