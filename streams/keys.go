package streams

// Keys builds the Redis keys of one partition of a crawl (see Layout); all of them share
// one hash tag, {<crawl>} for a crawl of one partition or the crawl-wide keys, and
// {<crawl>:<p>} for partition p of a partitioned crawl, so every script touches one slot.
type Keys struct {
	crawl string
	tag   string
}

// NewKeys returns the key builder of a crawl of one partition (crawl is a name
// validated by spiders.ValidateName).
func NewKeys(crawl string) Keys { return Keys{crawl: crawl, tag: crawl} }

// Crawl returns the crawl name.
func (k Keys) Crawl() string { return k.crawl }

// Tag returns the hash tag the keys share (without braces).
func (k Keys) Tag() string { return k.tag }

func (k Keys) key(suffix string) string { return "sc:{" + k.tag + "}:" + suffix }

// Requests is the stream of requests to fetch (read by group "fetch").
func (k Keys) Requests() string { return k.key("requests") }

// Responses is the stream of fetched responses (read by group "parse").
func (k Keys) Responses() string { return k.key("responses") }

// Items is the stream of scraped items (read by group "store" and post-processors).
func (k Keys) Items() string { return k.key("items") }

// Dead is the dead-letter stream: entries that failed too often or could not be decoded.
func (k Keys) Dead() string { return k.key("dead") }

// Waiting is the hash of the requests waiting in the partition's host queues, by the
// ID their queue holds (its length is the frontier's size: "done" needs it at zero).
func (k Keys) Waiting() string { return k.key("waiting") }

// HostQueue is the ZSET of one host's waiting requests (host as NormalHost gives it):
// their IDs in Waiting, scored by the crawl's order (see Order): band, then order of
// discovery.
func (k Keys) HostQueue(host string) string { return k.HostQueuePrefix() + host }

// HostQueuePrefix is what HostQueue puts before the host; the frontier's scripts build
// the queue of a host they picked from the ready set or the schedule with it.
func (k Keys) HostQueuePrefix() string { return k.key("hq:") }

// Ready is the ZSET of hosts that may start a request now and have some waiting,
// scored by their best waiting request's band, then by turn (hosts of one band take
// turns).
func (k Keys) Ready() string { return k.key("ready") }

// Sched is the ZSET of hosts that may not start a request before a time (their delay
// or back-off), scored by that time in ms on the Redis clock.
func (k Keys) Sched() string { return k.key("sched") }

// Leases is the ZSET of requests handed to fetchers for hosts with a concurrency
// limit: "<host>|<requests stream ID>" scored by when the slot is taken back if no
// fetcher gave it back (ms, Redis clock).
func (k Keys) Leases() string { return k.key("leases") }

// Seq is a counter that orders requests within one score band and hosts within one
// ready band.
func (k Keys) Seq() string { return k.key("seq") }

// Delayed is the ZSET of requests waiting for a time (retries), scored by due time (ms);
// a due request goes back to its host's queue.
func (k Keys) Delayed() string { return k.key("delayed") }

// Hosts is the hash of per-host state, fields "<host>:<x>" present only while they
// differ from the defaults: f requests in flight, r politeness rule from the spider's
// limits, c robots.txt Crawl-delay (ms), a AutoThrottle latency (ms), b back-off level.
func (k Keys) Hosts() string { return k.key("hosts") }

// Robots is the cached robots.txt of one host (expires after a day).
func (k Keys) Robots(host string) string { return k.key("robots:" + host) }

// RobotsLock is held by the one fetcher fetching a host's robots.txt.
func (k Keys) RobotsLock(host string) string { return k.key("robots-lock:" + host) }

// Seen is the set of request fingerprints ever enqueued (exact dedup).
func (k Keys) Seen() string { return k.key("seen") }

// SeenAt is the hash of request fingerprints to when they were queued, used instead of
// Seen when the crawl revisits URLs.
func (k Keys) SeenAt() string { return k.key("seenat") }

// ItemKeys is the set of item key fingerprints emitted (item dedup across pages and
// redeliveries).
func (k Keys) ItemKeys() string { return k.key("itemkeys") }

// Stats is a hash of crawl counters (pages fetched, items stored, drops by reason...).
// Counters live in the crawl-wide keys (Layout.Global); a partition's own hash holds
// what its scripts count (max_pages_used of a crawl of one partition).
func (k Keys) Stats() string { return k.key("stats") }

// HostStats is a hash of per-host fetch figures for the dashboard: "<host>|n" requests,
// "<host>|ms" their total time in milliseconds, "<host>|err" failures (network errors
// and 5xx); crawl-wide, in Layout.Global.
func (k Keys) HostStats() string { return k.key("hoststats") }

// Dicts is the hash of the crawl's response dictionaries: field "current" holds the ID
// of the one to compress new responses with, field <id> each dictionary (zstd format).
// In the global keys of a partitioned crawl.
func (k Keys) Dicts() string { return k.key("dicts") }

// LegacyFrontier is the ZSET of waiting requests of crawls started before host queues
// (one ZSET per partition, members the encoded requests, scored band × 1e9 ± order);
// frontier.MigrateFrontier empties it into the host queues.
func (k Keys) LegacyFrontier() string { return k.key("frontier") }

// Meta is a hash describing the crawl (spider name, when it was first seeded, its
// dedup and partitions); crawl-wide, in Layout.Global.
func (k Keys) Meta() string { return k.key("meta") }

// Input returns the stream a stage reads.
func (k Keys) Input(stage string) string {
	switch stage {
	case StageFetch:
		return k.Requests()
	case StageParse:
		return k.Responses()
	default:
		return k.Items()
	}
}

// Streams returns the crawl's streams with the stage group that reads each.
func (k Keys) Streams() []StreamGroup {
	return []StreamGroup{
		{Stream: k.Requests(), Group: StageFetch},
		{Stream: k.Responses(), Group: StageParse},
		{Stream: k.Items(), Group: StageStore},
	}
}

// Seeds is where running services take start URLs from (crawl-wide, the same in every
// partition's Keys): LPUSH a URL or a JSON request ({"url": ..., "meta": {...},
// "priority": N, ...}) to it, the scrapy-redis habit, SADD them when their order does
// not matter, or ZADD them with a score (taken highest score first, like scrapy-redis
// with REDIS_START_URLS_AS_ZSET). A key of any other type is an error that stops the
// crawl with a message rather than hang it. It has no hash tag of its own, so
// `LPUSH shop:start_urls URL` works as scrapy-redis users type it; SeedsProcessing
// shares its slot.
func (k Keys) Seeds() string { return k.crawl + ":start_urls" }

// SeedsProcessing holds seeds taken from Seeds until they are in the frontier.
func (k Keys) SeedsProcessing() string { return "{" + k.crawl + ":start_urls}:processing" }

// Pattern matches every key of the partition (SCAN MATCH), host queues and robots.txt
// included; for reset.
func (k Keys) Pattern() string { return k.key("*") }

// All returns the fixed keys of the partition (host queues and robots.txt aside), for reset.
func (k Keys) All() []string {
	return []string{k.Requests(), k.Responses(), k.Items(), k.Dead(), k.Delayed(), k.Waiting(), k.Ready(), k.Sched(), k.Leases(),
		k.Seq(), k.Seen(), k.SeenAt(), k.ItemKeys(), k.Stats(), k.Meta(), k.Hosts()}
}
