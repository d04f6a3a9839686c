package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
)

// Robots policy.
const (
	// robotsTTL is how long a host's robots.txt (or its 4xx answer, or the verdict that
	// it stayed unreachable) is kept in Redis.
	robotsTTL = 24 * time.Hour
	// DefaultRobotsRetry is how long a robots.txt that answered 5xx, or could not be
	// fetched, disallows the whole host before it is asked again (RFC 9309 2.3.1.3-4);
	// each next wait is twice the one before. With robots_unreachable_tries 3 a host
	// whose robots.txt never answers is given up after two waits (15 s, 30 s) and three
	// fetches (at most robotsTimeout, 20 s, each): under two minutes.
	DefaultRobotsRetry = 15 * time.Second
	// robotsMaxBytes is how much of a robots.txt is read (RFC 9309: at least 500 KiB).
	robotsMaxBytes = 500 << 10
	// robotsMaxRedirects is how many redirects a robots.txt fetch follows (RFC 9309: at
	// least five).
	robotsMaxRedirects = 5
	// robotsCacheSize is how many parsed robots.txt a process keeps.
	robotsCacheSize = 10000
	// robotsTimeout bounds one robots.txt fetch (less when the spider's download timeout
	// is shorter): a file of at most 500 KiB needs no longer, and a host that hangs is
	// given up sooner.
	robotsTimeout = 20 * time.Second
	// robotsRecheck is how long a process trusts a host's "unreachable" verdict before it
	// reads Redis again (a dead retry of the host's requests deletes it).
	robotsRecheck = time.Second
)

// robotsClient is c for robots.txt: up to robotsMaxRedirects redirects, to http(s)
// only, with none of the checks of page redirects (robots.txt is fetched for the check).
func robotsClient(c *http.Client) *http.Client {
	rc := *c
	rc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) > robotsMaxRedirects || req.URL.Scheme != "http" && req.URL.Scheme != "https" {
			return http.ErrUseLastResponse // a 3xx: treated as unavailable, allow all
		}
		return nil
	}
	return &rc
}

// robots fetches each host's robots.txt once per crawl (one fetcher takes a lock in
// Redis, fetches it and stores it for a day; the others read it from there) and answers
// whether a URL may be fetched, with the host's Crawl-delay. A robots.txt that answers
// 5xx or cannot be fetched disallows its host and is asked again later, up to tries
// times in all; then the host is unreachable: its requests are dropped.
type robots struct {
	rdb      redis.UniversalClient
	layout   streams.Layout
	client   *http.Client
	agent    string // the User-Agent robots.txt is asked with
	token    string // its product token, which robots.txt names crawlers by
	counters *streams.Counters
	log      *zap.Logger
	retry    time.Duration // the first wait after an unavailable robots.txt
	tries    int           // fetches of an unavailable robots.txt before its host is given up
	maxDelay time.Duration // the longest Crawl-delay obeyed
	timeout  time.Duration // bounds one fetch
	lockTTL  time.Duration // bounds how long others wait for the one fetching robots.txt
	// via routes a robots.txt request like a page's (the spider's proxies); nil: direct.
	via func(ctx context.Context, hreq *http.Request) (*http.Request, func(*http.Response, error), error)
	// gate passes a shared host's fleet-wide gate before robots.txt is fetched from
	// origin (fleetgate.go); the returned function gives its slot back. Nil: none.
	gate func(ctx context.Context, origin string) (leave func(), err error)

	mu    sync.Mutex
	cache map[string]robotsEntry // by scheme://host:port
}

// robotsEntry is a host's rules as this process knows them.
type robotsEntry struct {
	rules *robotsRules // nil: robots.txt unavailable (5xx, network error)
	// until is when an unavailable robots.txt is asked again; for one given up
	// (final), when this process reads Redis again.
	until time.Time
	tries int    // fetches that found it unavailable
	final bool   // given up after the last try: the host is unreachable
	why   string // the last failure (status or error) of an unavailable one
}

// robotsConfig is what newRobots needs besides the client.
type robotsConfig struct {
	agent    string
	retry    time.Duration
	tries    int
	maxDelay time.Duration
	timeout  time.Duration // the spider's download timeout
}

func newRobots(rdb redis.UniversalClient, layout streams.Layout, client *http.Client, c robotsConfig, counters *streams.Counters, log *zap.Logger) *robots {
	r := &robots{rdb: rdb, layout: layout, client: client, agent: c.agent, token: productToken(c.agent), counters: counters, log: log,
		retry: c.retry, tries: max(c.tries, 1), maxDelay: c.maxDelay, timeout: min(c.timeout, robotsTimeout), cache: map[string]robotsEntry{}}
	r.lockTTL = r.timeout + 10*time.Second
	return r
}

// robotsVerdict is the answer for one URL.
type robotsVerdict struct {
	allowed bool
	delay   time.Duration // the host's Crawl-delay
	capped  bool          // the Crawl-delay was longer than max_crawl_delay and cut to it
	wait    time.Duration // > 0: not known yet or robots.txt unavailable; ask again then
	// unavailable: robots.txt answered 5xx or could not be fetched; the host is
	// disallowed until wait has passed (RFC 9309).
	unavailable bool
	// unreachable: robots.txt stayed unavailable for every try; the host's requests are
	// dropped (why says what the last try found).
	unreachable bool
	why         string
	fetched     time.Time // set when this call fetched robots.txt from the host: when it started
}

// check answers for u.
func (r *robots) check(ctx context.Context, u *url.URL) (robotsVerdict, error) {
	if u.Path == "/robots.txt" {
		return robotsVerdict{allowed: true}, nil
	}
	origin := originOf(u)
	now := time.Now()
	r.mu.Lock()
	e, ok := r.cache[origin]
	r.mu.Unlock()
	var fetched time.Time
	if !ok || e.rules == nil && !now.Before(e.until) {
		var wait time.Duration
		var err error
		e, wait, fetched, err = r.load(ctx, origin)
		if err != nil || wait > 0 {
			return robotsVerdict{wait: wait}, err
		}
		r.mu.Lock()
		if len(r.cache) >= robotsCacheSize {
			clear(r.cache)
		}
		r.cache[origin] = e
		r.mu.Unlock()
	}
	switch {
	case e.final:
		return robotsVerdict{unreachable: true, why: fmt.Sprintf("robots.txt of %s unreachable after %d tries (last: %s)", origin, e.tries, e.why),
			fetched: fetched}, nil
	case e.rules == nil:
		return robotsVerdict{wait: max(time.Until(e.until), 100*time.Millisecond), unavailable: true, fetched: fetched}, nil
	}
	path := u.EscapedPath()
	if u.RawQuery != "" {
		path += "?" + u.RawQuery
	}
	return robotsVerdict{allowed: e.rules.allowed(path), delay: e.rules.delay, capped: e.rules.capped, fetched: fetched}, nil
}

// originOf is u's scheme and host key (spiders.HostKeyOf): one robots.txt per origin,
// whatever way a URL writes it.
func originOf(u *url.URL) string {
	return strings.ToLower(u.Scheme) + "://" + spiders.HostKeyOf(u)
}

// load returns the rules of origin from Redis, or fetches them if they are not there
// (or are an unavailable answer whose time to ask again has come) and this process
// wins the lock, with when the fetch started (it was a request to the host); otherwise
// it returns how long to wait.
func (r *robots) load(ctx context.Context, origin string) (e robotsEntry, wait time.Duration, fetched time.Time, err error) {
	keys := r.layout.ForHost(spiders.HostKey(origin))
	key := keys.Robots(origin)
	stored, err := r.rdb.Get(ctx, key).Result()
	prev := 0
	switch {
	case err == nil && isRobotsLock(stored):
		return robotsEntry{}, robotsWait, time.Time{}, nil
	case err == nil:
		e = r.entry(stored)
		if e.rules != nil || e.final || time.Now().Before(e.until) {
			return e, 0, time.Time{}, nil
		}
		prev = e.tries // unavailable, and its time to be asked again has come
	case !errors.Is(err, redis.Nil):
		return robotsEntry{}, 0, time.Time{}, fmt.Errorf("fetch: read robots.txt of %s: %w", origin, err)
	default:
		return r.fetchFirst(ctx, origin, key)
	}
	won, err := r.rdb.SetNX(ctx, keys.RobotsLock(origin), "1", r.lockTTL).Result()
	if err != nil {
		return robotsEntry{}, 0, time.Time{}, fmt.Errorf("fetch: lock robots.txt of %s: %w", origin, err)
	}
	if !won {
		return robotsEntry{}, robotsWait, time.Time{}, nil
	}
	// Another fetcher may have stored a fresh answer between the read and the lock.
	if again, err := r.rdb.Get(ctx, key).Result(); err == nil && again != stored {
		_ = r.rdb.Del(ctx, keys.RobotsLock(origin)).Err()
		return r.entry(again), 0, time.Time{}, nil
	}
	fetched = time.Now()
	status, body, again := r.fetch(ctx, origin)
	if again { // the proxy failed, not the site: ask again soon, through another one
		_ = r.rdb.Del(ctx, keys.RobotsLock(origin)).Err()
		return robotsEntry{}, robotsWait, time.Time{}, nil
	}
	stored = strconv.Itoa(status) + "\n" + body
	if unavailableStatus(status) {
		stored = r.unavailableRecord(origin, status, body, prev+1)
	}
	if err := r.rdb.Set(ctx, key, stored, robotsTTL).Err(); err != nil {
		return robotsEntry{}, 0, time.Time{}, fmt.Errorf("fetch: store robots.txt of %s: %w", origin, err)
	}
	_ = r.rdb.Del(ctx, keys.RobotsLock(origin)).Err()
	return r.entry(stored), 0, fetched, nil
}

// robotsFetching is the why of the record that locks a host's robots.txt key while
// one fetcher fetches it for the first time (see fetchFirst).
const robotsFetching = "robots.txt being fetched"

// lockRecord is the record fetchFirst stores as its lock: to a build that does not know
// it, an unavailable answer (tried 0 times) to ask again when the lock expires.
func (r *robots) lockRecord() string {
	return fmt.Sprintf("503 0 %d\n%s", time.Now().Add(r.lockTTL).UnixMilli(), robotsFetching)
}

// isRobotsLock reports whether a stored robots.txt record is fetchFirst's lock.
func isRobotsLock(stored string) bool {
	line, why, ok := strings.Cut(stored, "\n")
	return ok && why == robotsFetching && strings.HasPrefix(line, "503 0 ")
}

// fetchFirst fetches the robots.txt of origin, which Redis does not hold (key), if this
// process wins the lock, which is the key itself (SET NX of lockRecord, replaced by the
// answer): two commands per host besides the first read, where a lock key of its own
// took four (SET NX, a read again, DEL). Otherwise it returns how long to wait. The
// lock expires as the separate one did (a fetcher that dies holding it), and the next
// load fetches robots.txt again.
func (r *robots) fetchFirst(ctx context.Context, origin, key string) (robotsEntry, time.Duration, time.Time, error) {
	won, err := r.rdb.SetNX(ctx, key, r.lockRecord(), r.lockTTL).Result()
	if err != nil {
		return robotsEntry{}, 0, time.Time{}, fmt.Errorf("fetch: lock robots.txt of %s: %w", origin, err)
	}
	if !won {
		return robotsEntry{}, robotsWait, time.Time{}, nil
	}
	leave := func() {}
	if r.gate != nil {
		if leave, err = r.gate(ctx, origin); err != nil {
			_ = r.rdb.Del(ctx, key).Err()
			return robotsEntry{}, 0, time.Time{}, err
		}
	}
	fetched := time.Now()
	status, body, again := r.fetch(ctx, origin)
	leave()
	if again { // the proxy failed, not the site: ask again soon, through another one
		_ = r.rdb.Del(ctx, key).Err()
		return robotsEntry{}, robotsWait, time.Time{}, nil
	}
	stored := strconv.Itoa(status) + "\n" + body
	if unavailableStatus(status) {
		stored = r.unavailableRecord(origin, status, body, 1)
	}
	if err := r.rdb.Set(ctx, key, stored, robotsTTL).Err(); err != nil {
		return robotsEntry{}, 0, time.Time{}, fmt.Errorf("fetch: store robots.txt of %s: %w", origin, err)
	}
	return r.entry(stored), 0, fetched, nil
}

// unavailableRecord is the stored form of the tries-th unavailable answer of origin:
// "<status> <tries> <when to ask again, Unix ms>\n<why>", the time 0 once tries is the
// last (the host is then given up, and says so).
func (r *robots) unavailableRecord(origin string, status int, why string, tries int) string {
	var again int64
	if tries < r.tries {
		wait := r.retry << min(tries-1, 20)
		again = time.Now().Add(wait).UnixMilli()
		r.log.Info("robots.txt unavailable; host disallowed until asked again", zap.String("origin", origin),
			zap.Int("try", tries), zap.Int("tries", r.tries), zap.Duration("retry_in", wait), zap.String("why", why))
	} else {
		r.log.Warn("robots.txt unreachable; the host's requests are dropped", zap.String("origin", origin),
			zap.Int("tries", tries), zap.String("why", why))
	}
	return fmt.Sprintf("%d %d %d\n%s", status, tries, again, why)
}

// entry turns a stored robots.txt into its cache entry.
func (r *robots) entry(stored string) robotsEntry {
	statusLine, body, _ := strings.Cut(stored, "\n")
	f := strings.Fields(statusLine)
	status := 0
	if len(f) > 0 {
		status, _ = strconv.Atoi(f[0])
	}
	if !unavailableStatus(status) {
		return robotsEntry{rules: r.parse(status, body)}
	}
	e := robotsEntry{tries: 1, why: body, until: time.Now()}
	if len(f) >= 3 { // else written by a build that did not count tries: due now
		e.tries, _ = strconv.Atoi(f[1])
		at, _ := strconv.ParseInt(f[2], 10, 64)
		e.until = time.UnixMilli(at)
		e.final = at == 0
	}
	if e.final {
		e.until = time.Now().Add(robotsRecheck)
	}
	return e
}

// fetch gets origin's robots.txt and returns its status and body (decoded as page
// bodies are, at most robotsMaxBytes), status 0 and the error for a network failure;
// again is true when the proxy it went through failed (the answer says nothing about
// the site).
func (r *robots) fetch(ctx context.Context, origin string) (status int, body string, again bool) {
	if r.counters != nil {
		r.counters.Add("robots_fetched", 1)
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, origin+"/robots.txt", nil)
	if err != nil {
		return 0, err.Error(), false
	}
	req.Header.Set("User-Agent", r.agent)
	req.Header.Set("Accept-Encoding", acceptEncoding)
	release := func(*http.Response, error) {}
	if r.via != nil {
		if req, release, err = r.via(ctx, req); err != nil {
			return 0, err.Error(), false
		}
	}
	resp, err := r.client.Do(req)
	release(resp, err)
	if _, proxied := req.Context().Value(proxyKey{}).(*url.URL); proxied && proxyFailed(resp, err) {
		if resp != nil {
			resp.Body.Close()
		}
		return 0, "", true
	}
	if errors.Is(err, errBlockedAddress) {
		return http.StatusNotFound, "", false // the guard refuses the host: its pages are dropped by it, not parked
	}
	if err != nil {
		return 0, err.Error(), false
	}
	defer resp.Body.Close()
	if unavailableStatus(resp.StatusCode) {
		return resp.StatusCode, "HTTP " + strconv.Itoa(resp.StatusCode), false
	}
	dec, closeDec, err := decoder(resp.Body, resp.Header.Values("Content-Encoding"), robotsMaxBytes)
	if err != nil {
		r.log.Info("robots.txt body cannot be decoded; read as empty", zap.String("origin", origin), zap.Error(err))
		return resp.StatusCode, "", false
	}
	defer closeDec()
	data, _ := io.ReadAll(io.LimitReader(dec, robotsMaxBytes)) // what was read before an error counts
	return resp.StatusCode, string(data), false
}

// unavailableStatus reports an answer RFC 9309 reads as "unavailable": a server error,
// or no answer at all (0); the whole host is then disallowed.
func unavailableStatus(status int) bool { return status == 0 || status >= 500 }

// parse turns a robots.txt that is not unavailable into the rules for our user agent:
// 2xx is parsed, any other status (4xx, a redirect chain too long) allows all.
func (r *robots) parse(status int, body string) *robotsRules {
	if status < 200 || status > 299 {
		return &robotsRules{}
	}
	return parseRobots([]byte(body), r.token, r.maxDelay)
}

// ForgetRobots deletes the stored robots.txt (or verdict) of rawURL's origin, so that
// the next fetch of the host asks for it again, with all its tries: a dead retry of
// requests dropped as robots_unreachable does it. Fetch processes read the deletion
// within robotsRecheck.
func ForgetRobots(ctx context.Context, rdb redis.UniversalClient, l streams.Layout, rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil // no origin: nothing stored for it
	}
	origin := originOf(u)
	if err := rdb.Del(ctx, l.ForHost(spiders.HostKeyOf(u)).Robots(origin)).Err(); err != nil {
		return fmt.Errorf("fetch: forget robots.txt of %s: %w", origin, err)
	}
	return nil
}
