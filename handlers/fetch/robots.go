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
	"github.com/temoto/robotstxt"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
)

// Robots policy.
const (
	// robotsTTL is how long a host's robots.txt (or its 4xx answer) is kept in Redis.
	robotsTTL = 24 * time.Hour
	// DefaultRobotsRetry is how long a robots.txt that answered 5xx, or could not be
	// fetched, disallows the whole host before it is fetched again (RFC 9309 2.3.1.3-4).
	DefaultRobotsRetry = time.Minute
	// robotsLockTTL bounds how long other fetchers wait for the one fetching robots.txt.
	robotsLockTTL = 30 * time.Second
	// robotsMaxBytes is how much of a robots.txt is read (RFC 9309: at least 500 KiB).
	robotsMaxBytes = 500 << 10
	// robotsMaxRedirects is how many redirects a robots.txt fetch follows (RFC 9309: at
	// least five).
	robotsMaxRedirects = 5
	// robotsCacheSize is how many parsed robots.txt a process keeps.
	robotsCacheSize = 10000
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
// whether a URL may be fetched, with the host's Crawl-delay.
type robots struct {
	rdb      redis.UniversalClient
	layout   streams.Layout
	client   *http.Client
	agent    string
	counters *streams.Counters
	log      *zap.Logger
	retry    time.Duration // how long an unavailable robots.txt disallows its host
	// via routes a robots.txt request like a page's (the spider's proxies); nil: direct.
	via func(ctx context.Context, hreq *http.Request) (*http.Request, func(*http.Response, error), error)

	mu    sync.Mutex
	cache map[string]robotsEntry // by scheme://host:port
}

// robotsEntry is a host's rules as this process knows them.
type robotsEntry struct {
	group *robotstxt.Group // nil: robots.txt unavailable (5xx, network error)
	until time.Time        // when an unavailable entry is looked up again
}

func newRobots(rdb redis.UniversalClient, layout streams.Layout, client *http.Client, agent string, retry time.Duration, counters *streams.Counters, log *zap.Logger) *robots {
	return &robots{rdb: rdb, layout: layout, client: client, agent: agent, counters: counters, log: log,
		retry: retry, cache: map[string]robotsEntry{}}
}

// robotsVerdict is the answer for one URL.
type robotsVerdict struct {
	allowed bool
	delay   time.Duration // the host's Crawl-delay
	wait    time.Duration // > 0: not known yet or robots.txt unavailable; ask again then
	// unavailable: robots.txt answered 5xx or could not be fetched; the host is
	// disallowed until wait has passed (RFC 9309).
	unavailable bool
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
	if !ok || e.group == nil && !now.Before(e.until) {
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
	if e.group == nil {
		return robotsVerdict{wait: max(time.Until(e.until), 100*time.Millisecond), unavailable: true}, nil
	}
	path := u.EscapedPath()
	if u.RawQuery != "" {
		path += "?" + u.RawQuery
	}
	return robotsVerdict{allowed: e.group.Test(path), delay: e.group.CrawlDelay, fetched: fetched}, nil
}

// originOf is u's scheme and host key (spiders.HostKeyOf): one robots.txt per origin,
// whatever way a URL writes it.
func originOf(u *url.URL) string {
	return strings.ToLower(u.Scheme) + "://" + spiders.HostKeyOf(u)
}

// load returns the rules of origin from Redis, or fetches them if this process wins the
// lock (with when the fetch started: it was a request to the host); otherwise it
// returns how long to wait.
func (r *robots) load(ctx context.Context, origin string) (e robotsEntry, wait time.Duration, fetched time.Time, err error) {
	keys := r.layout.ForHost(spiders.HostKey(origin))
	key := keys.Robots(origin)
	pipe := r.rdb.Pipeline()
	get := pipe.Get(ctx, key)
	ttl := pipe.PTTL(ctx, key)
	_, err = pipe.Exec(ctx)
	if err == nil {
		return r.entry(get.Val(), ttl.Val()), 0, time.Time{}, nil
	}
	if !errors.Is(err, redis.Nil) {
		return robotsEntry{}, 0, time.Time{}, fmt.Errorf("fetch: read robots.txt of %s: %w", origin, err)
	}
	won, err := r.rdb.SetNX(ctx, keys.RobotsLock(origin), "1", robotsLockTTL).Result()
	if err != nil {
		return robotsEntry{}, 0, time.Time{}, fmt.Errorf("fetch: lock robots.txt of %s: %w", origin, err)
	}
	if !won {
		return robotsEntry{}, robotsWait, time.Time{}, nil
	}
	fetched = time.Now()
	stored, again := r.fetch(ctx, origin)
	if again { // the proxy failed, not the site: ask again soon, through another one
		_ = r.rdb.Del(ctx, keys.RobotsLock(origin)).Err()
		return robotsEntry{}, robotsWait, time.Time{}, nil
	}
	keep := robotsTTL
	if unavailable(stored) {
		keep = r.retry
	}
	if err := r.rdb.Set(ctx, key, stored, keep).Err(); err != nil {
		return robotsEntry{}, 0, time.Time{}, fmt.Errorf("fetch: store robots.txt of %s: %w", origin, err)
	}
	_ = r.rdb.Del(ctx, keys.RobotsLock(origin)).Err()
	return r.entry(stored, keep), 0, fetched, nil
}

// entry turns a stored robots.txt, kept in Redis for ttl more, into its cache entry.
func (r *robots) entry(stored string, ttl time.Duration) robotsEntry {
	if unavailable(stored) {
		if ttl <= 0 {
			ttl = r.retry
		}
		return robotsEntry{until: time.Now().Add(ttl)}
	}
	return robotsEntry{group: r.parse(stored)}
}

// fetch gets origin's robots.txt and returns it as stored: "<status>\n<body>", status 0
// for a network failure; again is true when the proxy it went through failed (the
// answer says nothing about the site).
func (r *robots) fetch(ctx context.Context, origin string) (stored string, again bool) {
	if r.counters != nil {
		r.counters.Add("robots_fetched", 1)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, origin+"/robots.txt", nil)
	if err != nil {
		return "0\n", false
	}
	req.Header.Set("User-Agent", r.agent)
	release := func(*http.Response, error) {}
	if r.via != nil {
		if req, release, err = r.via(ctx, req); err != nil {
			return "0\n", false
		}
	}
	resp, err := r.client.Do(req)
	release(resp, err)
	if _, proxied := req.Context().Value(proxyKey{}).(*url.URL); proxied && proxyFailed(resp, err) {
		if resp != nil {
			resp.Body.Close()
		}
		return "", true
	}
	if errors.Is(err, errBlockedAddress) {
		return "404\n", false // the guard refuses the host: its pages are dropped by it, not parked
	}
	if err != nil {
		r.log.Info("robots.txt unreachable; host disallowed until retried", zap.String("origin", origin),
			zap.Duration("retry_in", r.retry), zap.Error(err))
		return "0\n", false
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 500 {
		r.log.Info("robots.txt answered a server error; host disallowed until retried", zap.String("origin", origin),
			zap.Int("status", resp.StatusCode), zap.Duration("retry_in", r.retry))
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, robotsMaxBytes))
	return strconv.Itoa(resp.StatusCode) + "\n" + string(body), false
}

// unavailable reports a stored robots.txt that answered 5xx or was unreachable: RFC 9309
// says the whole host is then disallowed.
func unavailable(stored string) bool {
	statusLine, _, _ := strings.Cut(stored, "\n")
	status, _ := strconv.Atoi(statusLine)
	return status == 0 || status >= 500
}

// parse turns a stored robots.txt that is not unavailable into the group for our user
// agent: 2xx is parsed, any other status (4xx, a redirect chain too long) allows all.
func (r *robots) parse(stored string) *robotstxt.Group {
	statusLine, body, _ := strings.Cut(stored, "\n")
	status, _ := strconv.Atoi(statusLine)
	if status < 200 || status > 299 {
		status, body = http.StatusNotFound, ""
	}
	data, err := robotstxt.FromStatusAndBytes(status, []byte(body))
	if err != nil {
		data, _ = robotstxt.FromStatusAndBytes(http.StatusNotFound, nil)
	}
	return data.FindGroup(r.agent)
}
