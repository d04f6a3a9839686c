package spiders

import (
	"cmp"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
)

// Cookie modes (Settings.Cookies).
const (
	CookiesShared  = "shared"
	CookiesProcess = "process"
	CookiesOff     = "off"
)

// Durability modes (Settings.Durability).
const (
	DurabilityAsync      = "async"
	DurabilityReplicated = "replicated"
)

// Defaults of Settings.
const (
	DefaultConcurrency     = 32
	DefaultUserAgent       = "streamcrawl (+https://github.com/streamcrawl/streamcrawl)"
	DefaultDownloadTimeout = 30 * time.Second
	DefaultConnectTimeout  = 10 * time.Second
	DefaultMaxBodySize     = 10 << 20
	DefaultMaxRedirects    = 10
	// DefaultRenderMaxRequests is how many requests one rendered page makes at most.
	DefaultRenderMaxRequests = 500
	DefaultMaxRetries        = 3
	DefaultPerHostConc       = 8
	DefaultMaxURLLength      = 2083
	DefaultMaxItemSize       = 1 << 20
	DefaultMaxSeedSize       = 64 << 10
	// DefaultMaxCrawlDelay is the longest robots.txt Crawl-delay obeyed, Heritrix's
	// default ("respect crawl-delay up to 300 seconds").
	DefaultMaxCrawlDelay = 300 * time.Second
	// DefaultMaxLinksPerPage is how many links of one page are followed at most.
	DefaultMaxLinksPerPage = 10000
	// DefaultRobotsUnreachableTries is how many times an unavailable robots.txt is
	// asked before its host's requests are dropped.
	DefaultRobotsUnreachableTries = 3
	// DefaultWarnEmptyField is how many pages of an item type are parsed before a field
	// that never had a value is warned about.
	DefaultWarnEmptyField = 20
)

// Settings tune how a spider's pages are fetched and which are followed. Zero values
// mean the documented defaults (see SetDefaults). In YAML a duration is written with Go's
// units or in days, d being 24 hours ("30s", "200ms", "1h30m", "14d", "1d12h", "1.5d").
type Settings struct {
	// Concurrency is the number of requests in flight per fetch process. Default 32.
	Concurrency int `yaml:"concurrency"`
	// UserAgent is sent with every request. Default DefaultUserAgent.
	UserAgent string `yaml:"user_agent"`
	// DownloadTimeout bounds a whole fetch, body included. Default 30s.
	DownloadTimeout time.Duration `yaml:"download_timeout"`
	// ConnectTimeout bounds the TCP (and TLS) connect. Default 10s.
	ConnectTimeout time.Duration `yaml:"connect_timeout"`
	// MaxBodySize caps a body in bytes; longer bodies are cut and flagged truncated.
	// Default 10 MiB.
	MaxBodySize int64 `yaml:"max_body_size"`
	// MaxRedirects is the longest redirect chain followed; 0 follows none (the redirect
	// itself is the response). Unset (nil): DefaultMaxRedirects. See Redirects.
	MaxRedirects *int `yaml:"max_redirects"`
	// RenderMaxRequests caps the requests one rendered page makes (its sub-resources,
	// fetch and XHR calls; a CONNECT tunnel counts as one): past it the page's proxy
	// refuses them, counted (render_subrequests_capped). Default 500.
	RenderMaxRequests int `yaml:"render_max_requests"`
	// MaxURLLength drops links and seeds whose URL is longer, counted (dropped_url_too_long)
	// and logged short. Default 2083 characters, like Scrapy's URLLENGTH_LIMIT.
	MaxURLLength int `yaml:"max_url_length"`
	// MaxItemSize drops items whose encoded JSON is larger, counted
	// (items_dropped_too_large) and logged short. Default 1 MB.
	MaxItemSize ByteSize `yaml:"max_item_size"`
	// WarnEmptyFieldAfter is how many pages of an item type a parse process sees before
	// it warns, once per crawl, about each field of the type that had a value on none of
	// them (a selector that matches nothing). Default 20; -1 never warns.
	WarnEmptyFieldAfter int `yaml:"warn_empty_field_after"`
	// BodyBudget caps the response body bytes one fetch process holds at once (read and
	// not yet encoded for the responses stream); further body reads wait. Default: 1/400
	// of the machine's memory, between 32 MB and 256 MB.
	BodyBudget ByteSize `yaml:"body_budget"`
	// ResponseDict: "on" (the default, also "") compresses stored responses with a zstd
	// dictionary trained on the crawl's first responses; "off" does not. With
	// ResponseCompression off or s2 there is no dictionary either, nor by default when
	// responses are not retained (the default compression is then s2).
	ResponseDict string `yaml:"response_dict"`
	// ResponseCompression is how responses are stored: at a zstd level, "fastest",
	// "default" or "better"; "s2" (S2, no dictionary: about half of fastest's CPU for
	// ~1.8 times its bytes in Redis); or "off" (stored as fetched: no compression work,
	// about three times the bytes, and no dictionary). "" (the default) is s2 when
	// responses are not retained once parsed (settings.retention), fastest when they
	// are.
	ResponseCompression string `yaml:"response_compression"`
	// Headers are sent with every request.
	Headers map[string]string `yaml:"headers"`
	// MaxRetries is how many times a fetch that failed with a network error, a timeout,
	// a 5xx, 408 or 429 is retried (with exponential backoff through the crawl's delayed
	// set) before the request becomes a dead letter; 0 (or a negative value) retries
	// none. Default 3. Unset (nil) is DefaultMaxRetries: see Retries.
	MaxRetries *int `yaml:"max_retries"`
	// DedupItems drops an item whose key (type + key fields) a page of the crawl has
	// yielded before, at the parse stage, so that tracking-parameter variants of a page
	// and redelivered pages store each item once. Default true.
	DedupItems *bool `yaml:"dedup_items"`
	// ItemVersions keeps, instead of dropping, an item whose key was emitted before when
	// its field values changed: it goes out again with _version and _changed (see
	// ItemVersioned). Default: on when the spider revisits (revisit.rules or
	// revisit.after), off otherwise. Needs dedup_items.
	ItemVersions *bool `yaml:"item_versions"`
	// Order is the order the frontier hands out requests in: "priority" (the default:
	// higher priority first, then first found first), "breadth-first" or "depth-first".
	Order string `yaml:"order"`
	// FrontierWindow is the most requests waiting unread in the requests stream; the
	// rest wait in the frontier in order. Default 4×concurrency.
	FrontierWindow int `yaml:"frontier_window"`
	// MaxPages stops the crawl from queueing more than this many requests in all
	// (start URLs included); 0 means no limit.
	MaxPages int64 `yaml:"max_pages"`
	// Revisit is when URLs are fetched again: an adaptive schedule by rules, every URL
	// after a time, or the seen set forgetting URLs (see RevisitSettings). Zero: a URL
	// is fetched once.
	Revisit RevisitSettings `yaml:"revisit"`
	// Budget bounds the pages and bytes one host or registered domain may take of the
	// crawl (see Budget). Zero: none.
	Budget Budget `yaml:"budget"`
	// MaxDepth drops requests deeper than this many links from a start URL; 0 means no limit.
	MaxDepth int `yaml:"max_depth"`
	// MaxLinksPerPage bounds the links taken from one page (Links, the follow rules, the
	// requests a callback yields; sitemaps have their own bound, 50,000): the rest are
	// counted (links_dropped_over_cap) and left. Default 10,000 (Heritrix stops at
	// 6,000); a page with 700,000 links cost a parse process 544 MB without it.
	MaxLinksPerPage int `yaml:"max_links_per_page"`

	// ObeyRobots fetches each host's robots.txt once per crawl (shared through Redis,
	// kept a day), skips the URLs it disallows for UserAgent and honours its
	// Crawl-delay. Default true.
	ObeyRobots *bool `yaml:"obey_robots"`
	// MaxCrawlDelay caps a robots.txt Crawl-delay: a longer one (100000, 1e300) is cut to
	// it, counted (robots_crawl_delay_capped) and logged. Default 300s.
	MaxCrawlDelay time.Duration `yaml:"max_crawl_delay"`
	// RobotsUnreachableTries is how many times a robots.txt that answers 5xx or cannot
	// be fetched (no answer in time, refused, TLS failure) is asked, with waits between
	// of 15 s doubling, before the host is given up: its waiting requests become dead
	// letters with the reason robots_unreachable (counted), so that the crawl can end.
	// Until then the host is disallowed (RFC 9309). Default 3.
	RobotsUnreachableTries int `yaml:"robots_unreachable_tries"`
	// AllowPrivateNetworks lets the crawl reach loopback, private and link-local
	// addresses. Default false: a crawler follows untrusted links and must not become a
	// way into the network it runs in.
	AllowPrivateNetworks bool `yaml:"allow_private_networks"`
	// AllowNetworks lets the crawl reach exactly these non-public targets: CIDRs
	// ("127.0.0.1/32", "10.1.2.0/24"), single addresses, or host names (any address
	// they resolve to). Every other loopback, private, link-local and metadata address
	// stays blocked, redirects included. Ignored when AllowPrivateNetworks is true.
	AllowNetworks []string `yaml:"allow_networks"`
	// PerHostConcurrency is the most requests in flight to one host across all fetch
	// processes. Default 8; -1 means no limit (and, with no delay, no politeness work in
	// Redis at all).
	PerHostConcurrency int `yaml:"per_host_concurrency"`
	// PerHostDelay is the least time between the end of one request to a host and the
	// start of the next, across all fetch processes: a host with a delay gets one
	// request at a time (with PerHostConcurrency -1, no limit, it counts from each
	// start). Default 0.
	PerHostDelay time.Duration `yaml:"per_host_delay"`
	// Limits override PerHostConcurrency and PerHostDelay for hosts matching a glob;
	// the first match wins.
	Limits []LimitRule `yaml:"limits"`
	// Autothrottle raises a host's delay towards its observed response time, like
	// Scrapy's AutoThrottle with a target concurrency of 1. Default false.
	Autothrottle bool `yaml:"autothrottle"`

	// Dedup is how the crawl remembers the URLs it has queued: "exact" (the default:
	// binary fingerprints bucketed into small hashes, ~23 bytes per URL), "bloom" (a
	// scalable Bloom filter, ~1.3 bytes per URL; a false positive drops a URL that was
	// never crawled, about error_rate of them) or "set" (one Redis set, ~70 bytes per
	// URL). A crawl keeps the dedup it started with.
	Dedup string `yaml:"dedup"`
	// Capacity is how many URLs the crawl is planned for (sizes the buckets or the first
	// Bloom filter). Default 10,000,000.
	Capacity int64 `yaml:"capacity"`
	// ErrorRate is the Bloom filter's false-positive rate. Default 0.01.
	ErrorRate float64 `yaml:"error_rate"`
	// Fingerprint shapes the request fingerprints the duplicate filter compares: query
	// parameters dropped or kept, the path lower-cased, headers or the body in the key
	// (see FingerprintRules). Default: method, canonical URL and body. A running crawl
	// whose rules change keeps its seen set, and warns (see README "Request
	// fingerprints"); Spider.FingerprintFunc replaces the rules.
	Fingerprint FingerprintRules `yaml:"fingerprint"`

	// Cookies is where the crawl keeps cookies: "shared" (the default, like Scrapy's
	// COOKIES_ENABLED: one jar per crawl in Redis, used by every fetch process),
	// "process" (a jar per fetch process) or "off". A request's "cookiejar" meta picks
	// a session of its own (several logins side by side).
	Cookies string `yaml:"cookies"`

	// Proxies are the proxies requests go through, in rotation: http://, https://,
	// socks5:// or socks5h:// URLs, credentials in the URL (never logged). A request's
	// "proxy" meta names one proxy for that request instead. Empty: no proxy (the
	// HTTP_PROXY environment variables still apply).
	Proxies []string `yaml:"proxies"`
	// ProxyConcurrency is the most requests in flight through one proxy of Proxies per
	// fetch process; 0 means no limit.
	ProxyConcurrency int `yaml:"proxy_concurrency"`
	// ProxyBanAfter is how many failures in a row (connection errors, 407, 502, 503,
	// 504 from the proxy) bench a proxy. Default 3.
	ProxyBanAfter int `yaml:"proxy_ban_after"`
	// ProxyBanFor is how long a benched proxy rests. Default 5m.
	ProxyBanFor time.Duration `yaml:"proxy_ban_for"`

	// Partitions splits the crawl's Redis keys into this many hash-tagged partitions
	// (sc:{<name>:<p>}:...), each with its own frontier, streams and dedup, every host in
	// one of them, so that a Redis Cluster spreads the crawl over its masters. Default 1
	// (keys sc:{<name>}:...). A crawl keeps the partitions it started with.
	Partitions int `yaml:"partitions"`

	// Durability says when the writes a stage acks its input after count as done:
	// "async" (the default: on the Redis primary; a failover can lose what its replicas
	// had not received yet) or "replicated" (on the primary and DurabilityReplicas
	// replicas, WAIT; a failover loses none of it, at the cost of waiting for the
	// replicas). Overridden by --durability.
	Durability string `yaml:"durability"`
	// DurabilityReplicas is how many replicas must have a write with durability
	// replicated. Default 1.
	DurabilityReplicas int `yaml:"durability_replicas"`

	// Retention bounds, per stream (requests, responses, items), what is kept after
	// every consumer group has acked it: {max_age: 10m, max_bytes: 256MB}. Streams not
	// named keep DefaultRetention: responses and requests nothing, items a day up to
	// 16 MB.
	Retention map[string]StreamRetention `yaml:"retention"`
}

// LimitRule is a per-domain politeness override, like Colly's LimitRule.
type LimitRule struct {
	// Domain is a glob matched against the host name ("*.example.com").
	Domain string `yaml:"domain"`
	// Concurrency is the most requests in flight to a matching host; 0 keeps the default.
	Concurrency int `yaml:"concurrency"`
	// Delay is the least time between two requests to a matching host (see
	// Settings.PerHostDelay).
	Delay time.Duration `yaml:"delay"`
}

// SetDefaults fills zero values with the defaults.
func (s *Settings) SetDefaults() {
	s.Concurrency = cmp.Or(s.Concurrency, DefaultConcurrency)
	s.UserAgent = cmp.Or(s.UserAgent, DefaultUserAgent)
	s.DownloadTimeout = cmp.Or(s.DownloadTimeout, DefaultDownloadTimeout)
	s.ConnectTimeout = cmp.Or(s.ConnectTimeout, DefaultConnectTimeout)
	s.MaxBodySize = cmp.Or(s.MaxBodySize, DefaultMaxBodySize)
	s.MaxURLLength = cmp.Or(s.MaxURLLength, DefaultMaxURLLength)
	s.RenderMaxRequests = cmp.Or(s.RenderMaxRequests, DefaultRenderMaxRequests)
	s.MaxItemSize = cmp.Or(s.MaxItemSize, DefaultMaxItemSize)
	s.MaxCrawlDelay = cmp.Or(s.MaxCrawlDelay, DefaultMaxCrawlDelay)
	s.MaxLinksPerPage = cmp.Or(s.MaxLinksPerPage, DefaultMaxLinksPerPage)
	s.RobotsUnreachableTries = cmp.Or(s.RobotsUnreachableTries, DefaultRobotsUnreachableTries)
	s.PerHostConcurrency = cmp.Or(s.PerHostConcurrency, DefaultPerHostConc)
	s.FrontierWindow = cmp.Or(s.FrontierWindow, 4*s.Concurrency)
	s.Partitions = cmp.Or(s.Partitions, 1)
}

// PrivateNetworksAllowed reports allow_private_networks (default false: no requests to
// loopback, private or link-local addresses, checked after DNS resolution).
func (s *Settings) PrivateNetworksAllowed() bool {
	return s.AllowPrivateNetworks
}

// Networks splits AllowNetworks into address prefixes and host names (as host key names,
// see HostKeyName).
func (s *Settings) Networks() ([]netip.Prefix, []string, error) {
	var prefixes []netip.Prefix
	var hosts []string
	for _, n := range s.AllowNetworks {
		n = strings.TrimSpace(n)
		if p, err := netip.ParsePrefix(n); err == nil {
			prefixes = append(prefixes, p.Masked())
			continue
		}
		if a, err := netip.ParseAddr(strings.Trim(n, "[]")); err == nil {
			prefixes = append(prefixes, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			continue
		}
		h := normalName(n) // as a host key's name
		if h == "" || strings.ContainsAny(n, "/:@ \t[]") {
			return nil, nil, fmt.Errorf("spiders: settings.allow_networks: %q is not a CIDR, an address or a host name", n)
		}
		hosts = append(hosts, h)
	}
	return prefixes, hosts, nil
}

// Redirects returns the effective MaxRedirects: DefaultMaxRedirects when unset.
func (s *Settings) Redirects() int {
	if s.MaxRedirects == nil {
		return DefaultMaxRedirects
	}
	return *s.MaxRedirects
}

// RobotsObeyed reports obey_robots (default true).
func (s *Settings) RobotsObeyed() bool { return s.ObeyRobots == nil || *s.ObeyRobots }

// ItemDedup returns the effective DedupItems.
func (s *Settings) ItemDedup() bool { return s.DedupItems == nil || *s.DedupItems }

// ItemVersioned reports whether items are versioned (ItemVersions): only with item
// dedup (the key is what a version belongs to); by default when pages are fetched
// again (revisit.rules or revisit.after), where a value can change, and not in a
// one-pass crawl, which keeps the plain set of keys (16 bytes of key per item, no
// record).
func (s *Settings) ItemVersioned() bool {
	if !s.ItemDedup() {
		return false
	}
	if s.ItemVersions != nil {
		return *s.ItemVersions
	}
	return s.Revisit.Fetches()
}

// Retries returns the effective MaxRetries: DefaultMaxRetries when unset, none for 0 or
// a negative value (which meant none before 0 did, and still does).
func (s *Settings) Retries() int {
	switch {
	case s.MaxRetries == nil:
		return DefaultMaxRetries
	case *s.MaxRetries < 0:
		return 0
	}
	return *s.MaxRetries
}

// Validate reports settings out of range.
func (s *Settings) Validate() error {
	if s.ItemVersions != nil && *s.ItemVersions && !s.ItemDedup() {
		return fmt.Errorf("spiders: settings.item_versions needs dedup_items (a version belongs to an item key)")
	}
	if err := s.Revisit.validate(s.Dedup); err != nil {
		return err
	}
	switch {
	case s.Concurrency < 0 || s.Concurrency > 10000:
		return fmt.Errorf("spiders: settings.concurrency %d out of range 1..10000", s.Concurrency)
	case s.DownloadTimeout < 0:
		return negative("download_timeout", s.DownloadTimeout)
	case s.ConnectTimeout < 0:
		return negative("connect_timeout", s.ConnectTimeout)
	case s.MaxBodySize < 0:
		return negative("max_body_size", s.MaxBodySize)
	case s.MaxRedirects != nil && *s.MaxRedirects < 0:
		return negative("max_redirects", *s.MaxRedirects)
	case s.MaxURLLength < 0:
		return negative("max_url_length", s.MaxURLLength)
	case s.RenderMaxRequests < 0:
		return negative("render_max_requests", s.RenderMaxRequests)
	case s.MaxItemSize < 0:
		return negative("max_item_size", s.MaxItemSize)
	case s.WarnEmptyFieldAfter < -1:
		return fmt.Errorf("spiders: settings.warn_empty_field_after %d: want a page count, or -1 for never", s.WarnEmptyFieldAfter)
	case s.BodyBudget < 0:
		return negative("body_budget", s.BodyBudget)
	case s.ResponseDict != "" && !slices.Contains(responseDicts, s.ResponseDict):
		return fmt.Errorf("spiders: settings.response_dict %q: want %s", s.ResponseDict, oneOf(responseDicts))
	case s.ResponseCompression != "" && !slices.Contains(responseCompressions, s.ResponseCompression):
		return fmt.Errorf("spiders: settings.response_compression %q: want %s", s.ResponseCompression, oneOf(responseCompressions))
	case s.Order != "" && s.Order != "priority" && s.Order != "breadth-first" && s.Order != "depth-first":
		return fmt.Errorf("spiders: settings.order %q: want priority, breadth-first or depth-first", s.Order)
	case s.Dedup != "" && s.Dedup != "exact" && s.Dedup != "bloom" && s.Dedup != "set":
		return fmt.Errorf("spiders: settings.dedup %q: want exact, bloom or set", s.Dedup)
	case s.Capacity < 0:
		return negative("capacity", s.Capacity)
	case s.ErrorRate < 0 || s.ErrorRate >= 0.5:
		return fmt.Errorf("spiders: settings.error_rate %g: want a rate between 0 and 0.5", s.ErrorRate)
	case s.FrontierWindow < 0:
		return negative("frontier_window", s.FrontierWindow)
	case s.MaxPages < 0:
		return negative("max_pages", s.MaxPages)
	case s.PerHostConcurrency < -1:
		return fmt.Errorf("spiders: settings.per_host_concurrency %d: want -1 (no limit) or more", s.PerHostConcurrency)
	case s.PerHostDelay < 0:
		return negative("per_host_delay", s.PerHostDelay)
	case s.MaxLinksPerPage < 0:
		return negative("max_links_per_page", s.MaxLinksPerPage)
	case s.MaxCrawlDelay < 0:
		return negative("max_crawl_delay", s.MaxCrawlDelay)
	case s.RobotsUnreachableTries < 0:
		return negative("robots_unreachable_tries", s.RobotsUnreachableTries)
	case s.MaxDepth < 0:
		return negative("max_depth", s.MaxDepth)
	case s.Cookies != "" && s.Cookies != CookiesShared && s.Cookies != CookiesProcess && s.Cookies != CookiesOff:
		return fmt.Errorf("spiders: settings.cookies %q: want shared, process or off", s.Cookies)
	case s.Durability != "" && s.Durability != DurabilityAsync && s.Durability != DurabilityReplicated:
		return fmt.Errorf("spiders: settings.durability %q: want async or replicated", s.Durability)
	case s.DurabilityReplicas < 0 || s.DurabilityReplicas > 0 && s.Durability != DurabilityReplicated:
		return fmt.Errorf("spiders: settings.durability_replicas %d: want a positive count with durability: replicated", s.DurabilityReplicas)
	case s.Partitions < 0 || s.Partitions > 1024:
		return fmt.Errorf("spiders: settings.partitions %d out of range 1..1024", s.Partitions)
	case !httpguts.ValidHeaderFieldValue(s.UserAgent) || strings.ContainsAny(s.UserAgent, "\r\n"):
		return fmt.Errorf("spiders: settings.user_agent %q has control characters (a line break would end the header)", s.UserAgent)
	}
	if err := s.Budget.Validate(); err != nil {
		return err
	}
	if _, _, err := s.Networks(); err != nil {
		return err
	}
	if err := s.Fingerprint.Validate(); err != nil {
		return err
	}
	for _, p := range s.Proxies {
		if _, err := ParseProxy(p); err != nil {
			return fmt.Errorf("spiders: settings.proxies: %w", err)
		}
	}
	if s.ProxyConcurrency < 0 || s.ProxyBanAfter < 0 || s.ProxyBanFor < 0 {
		return fmt.Errorf("spiders: settings.proxy_concurrency, proxy_ban_after and proxy_ban_for must not be negative")
	}
	if err := ValidateHeaders("settings.headers", s.Headers); err != nil {
		return err
	}
	return s.validateRetention()
}

// negative is the error of the setting at key (its path under settings, "max_pages",
// "budget.bytes_per_host") whose value v is below zero: a duration written as one
// ("-1s"), any other number in decimal.
func negative(key string, v any) error {
	if d, ok := v.(time.Duration); ok {
		return fmt.Errorf("spiders: settings.%s %s is negative", key, d)
	}
	return fmt.Errorf("spiders: settings.%s %d is negative", key, v)
}

// ValidateHeaders reports a header name that is not an HTTP token or a value with
// control characters (CR or LF would split the request); where names the headers in
// the message.
func ValidateHeaders(where string, h map[string]string) error {
	for k, v := range h {
		if !httpguts.ValidHeaderFieldName(k) {
			return fmt.Errorf("spiders: %s: invalid header name %q", where, k)
		}
		if !httpguts.ValidHeaderFieldValue(v) {
			return fmt.Errorf("spiders: %s: header %s has an invalid value %q (control characters)", where, k, v)
		}
	}
	return nil
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// ValidateName checks a crawl name: 1-64 letters, digits, '_', '.', '-', not starting
// with punctuation (it becomes part of Redis keys and file names).
func ValidateName(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("spiders: invalid spider name %q: use 1-64 letters, digits, '_', '.', '-'", name)
	}
	return nil
}
