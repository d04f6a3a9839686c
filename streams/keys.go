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

	// Counts is the partition's counters hash, kept by the frontier's scripts as they
	// run so that looking at a crawl costs a handful of commands whatever its size:
	// "waiting" requests in host queues (the frontier's size: "done" needs it at zero),
	// "seen" fingerprints the dedup recorded new, "queued" requests ever queued, "items"
	// items added, "handed_out" requests moved to the requests stream.
	Counts string
	// HostQueues is what HostQueue puts before a host; the frontier's scripts build the
	// queues of a host they picked from the ready set or the schedule with it.
	HostQueues string
	// HostStates is what HostState puts before a host.
	HostStates string
	// Ready is the ZSET of hosts that may start a request now and have some waiting,
	// scored by their best waiting request's band, then by turn (hosts of one band take
	// turns).
	Ready string
	// ReadyBands is the hash of hosts of concurrency 1 to the band of their last
	// request handed out (as the frontier's scripts build it: Ready+":bands"), so that
	// a host whose turn comes again is made ready without reading its state hash; an
	// entry goes when the host's bands or rule change and when it is retired.
	ReadyBands string
	// Sched is the ZSET of hosts that may not start a request before a time (their
	// delay or back-off), scored by that time in ms on the Redis clock.
	Sched string
	// Leases is the ZSET of requests handed to fetchers for hosts with a concurrency
	// limit: "<host>|<requests stream ID>" scored by when the slot is taken back if no
	// fetcher gave it back (ms, Redis clock).
	Leases string
	// Backoff is the hash of the hosts backing off after 429/503 answers: host to its
	// back-off level (present only while above zero).
	Backoff string
	// Seq is a counter that orders hosts within one ready band and numbers the
	// frontier's messages.
	Seq string
	// Delayed is the ZSET of requests waiting for a time (retries), scored by due time
	// (ms, Redis clock); a due request goes back to its host's queue.
	Delayed string
	// Revisits is the ZSET of the revisit schedule's buckets: one member per minute that
	// has revisits due in it (the minute since the Unix epoch, Redis clock), scored by
	// that minute. The bucket's entries are in the LIST at Revisits + ":" + the minute,
	// a name the revisit scripts build.
	Revisits string
	// Budget is the hash of what each host (or registered domain) used of the crawl's
	// budget (spiders.Budget), present only when the crawl has one: field <key> the
	// requests ever queued, <key>|b the body bytes fetched. A partition holds its own
	// hosts'; a crawl partitioned with a budget per domain keeps the domains' in the
	// crawl-wide one (Layout.Global), which each emit reserves from.
	Budget string
	// BudgetTop is the ZSET of the hosts (or domains) that queued the most requests
	// under Budget, scored by that count and trimmed to the top few, for status.
	BudgetTop string
	// LegacyWaiting is the hash of waiting requests of crawls written before compact
	// host queues (ID to request, the IDs in a ZSET per host at HostQueues+host);
	// frontier.Migrate moves them into the host queues.
	LegacyWaiting string
	// LegacyHosts is the hash of per-host state of crawls written before per-host
	// state hashes ("<host>:<x>" fields); frontier.Migrate moves it into HostState.
	LegacyHosts string
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
	// ItemKeys is the base key of the item key fingerprints emitted (item dedup across
	// pages and redeliveries): in exact dedup mode the buckets ItemKeys:<n> beside it,
	// else a set at ItemKeys itself (see dedup.Deduper.Lua).
	ItemKeys string

	// Stats is a hash of crawl counters (pages fetched, items stored, drops by
	// reason...). Counters live in the crawl-wide keys (Layout.Global); a partition's own
	// hash holds what its scripts count (max_pages_used of a crawl of one partition).
	Stats string
	// HostStats is what hostStatsWindow puts before a window's number.
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
		Counts: key("counts"), HostQueues: key("hq:"), HostStates: key("h:"), Ready: key("ready"), ReadyBands: key("ready:bands"), Sched: key("sched"),
		Leases: key("leases"), Backoff: key("backoff"), Seq: key("seq"), Delayed: key("delayed"),
		Revisits: key("rv"), Budget: key("budget"), BudgetTop: key("budget:top"),
		LegacyWaiting: key("waiting"), LegacyHosts: key("hosts"), LegacyFrontier: key("frontier"),
		Seen: key("seen"), SeenAt: key("seenat"), ItemKeys: key("itemkeys"),
		Stats: key("stats"), HostStats: key("hoststats:"), Meta: key("meta"), Dicts: key("dicts"), Login: key("login"),
		Render: key("render"),
		Seeds:  crawl + ":start_urls", SeedsProcessing: "{" + crawl + ":start_urls}:processing",
		Pattern: key("*"),
	}
}

// key returns the key of the partition with suffix.
func (k Keys) key(suffix string) string { return "sc:{" + k.Tag + "}:" + suffix }

// HostQueue is the LIST of one host's waiting requests of one score band (host: its
// key, spiders.HostKey; band: see frontier.Config.Order), in the order they are handed
// out, each in the frontier's compact form.
func (k Keys) HostQueue(host string, band int) string {
	return k.HostQueues + host + "|" + strconv.Itoa(band)
}

// HostState is the hash of one host's scheduling state, present only while the host
// has requests waiting or in flight (or, for a while, a robots.txt Crawl-delay or an
// AutoThrottle latency to remember): "q<band>" requests waiting in a band, "f"
// requests in flight, "r" its politeness rule from the spider's limits, "c" its
// Crawl-delay (ms), "a" its AutoThrottle latency (ms), "x" set while the hash expires.
func (k Keys) HostState(host string) string { return k.HostStates + host }

// LegacyHostQueue is the ZSET of one host's waiting requests (IDs in LegacyWaiting) of
// a crawl written before compact host queues.
func (k Keys) LegacyHostQueue(host string) string { return k.HostQueues + host }

// hostStatsWindow is the hash of the per-host fetch figures of one time window (its
// number: Unix time / the window's length) in the partition of the hosts it counts:
// "<host>|n" requests, "<host>|ms" their total time in milliseconds, "<host>|err"
// failures (network errors and 5xx), for the hosts each fetch process found slowest or
// failing most in the window. It expires a few windows later.
func (k Keys) hostStatsWindow(window int64) string {
	return k.HostStats + strconv.FormatInt(window, 10)
}

// RevisitChains is one of the small hashes that keep, per URL with revisits, the chain
// its scheduled revisit belongs to (frontier.RevisitChain): field 8 bytes of the URL's
// fingerprint, value "<gen>:<minute>".
func (k Keys) RevisitChains(hash uint32) string {
	return k.key("rvc:" + strconv.FormatUint(uint64(hash), 10))
}

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

// ValidatorsOf is one bucket of the validators of generation gen, used instead of
// Validators when the crawl forgets (settings.revisit.forget_after): the key expires
// once no fetch reads its generation.
func (k Keys) ValidatorsOf(gen int64, bucket uint32) string {
	return k.key("validators:g" + strconv.FormatInt(gen, 10) + ":" + strconv.FormatUint(uint64(bucket), 10))
}

// ItemRecords is one bucket of the item records of a partition whose items are
// versioned (spiders.ItemRecord): small hashes, field the 16-byte item key, value its
// record; used instead of ItemKeys.
func (k Keys) ItemRecords(bucket uint32) string {
	return k.key("itemrec:" + strconv.FormatUint(uint64(bucket), 10))
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
	return []string{k.Requests, k.Responses, k.Items, k.Dead, k.Delayed, k.Revisits, k.Budget, k.BudgetTop, k.Counts, k.Ready, k.ReadyBands, k.Sched, k.Leases,
		k.Backoff, k.Seq, k.Seen, k.SeenAt, k.ItemKeys, k.Stats, k.Meta, k.LegacyWaiting, k.LegacyHosts, k.LegacyFrontier}
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

// HostGate is the key of host's fleet-wide politeness gate (package streams/hostgate):
// one hash per host, shared by every crawl that reaches the host. Its hash tag is the
// host's, "host=" and the host key, so that the gates of many hosts spread over a
// cluster's slots; no crawl's tag can take that form ('=' is not allowed in a crawl
// name), and no crawl's reset (Keys.Pattern) matches it.
func HostGate(host string) string { return "sc:{host=" + host + "}:gate" }
