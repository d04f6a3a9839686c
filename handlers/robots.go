package handlers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/temoto/robotstxt"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/streams"
)

// Robots policy.
const (
	// RobotsTTL is how long a host's robots.txt is kept in Redis.
	RobotsTTL = 24 * time.Hour
	// robotsLockTTL bounds how long other fetchers wait for the one fetching robots.txt.
	robotsLockTTL = 30 * time.Second
	// robotsMaxBytes caps a robots.txt body (Google reads 500 KiB).
	robotsMaxBytes = 512 << 10
	// robotsCacheSize is how many parsed robots.txt a process keeps.
	robotsCacheSize = 10000
)

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

	mu    sync.Mutex
	cache map[string]*robotstxt.Group // by scheme://host:port
}

func newRobots(rdb redis.UniversalClient, layout streams.Layout, client *http.Client, agent string, counters *streams.Counters, log *zap.Logger) *robots {
	return &robots{rdb: rdb, layout: layout, client: client, agent: agent, counters: counters, log: log,
		cache: map[string]*robotstxt.Group{}}
}

// robotsVerdict is the answer for one URL.
type robotsVerdict struct {
	allowed bool
	delay   time.Duration // the host's Crawl-delay
	wait    time.Duration // > 0: another fetcher is fetching robots.txt; ask again then
	fetched time.Time     // set when this call fetched robots.txt from the host: when it started
}

// check answers for u.
func (r *robots) check(ctx context.Context, u *url.URL) (robotsVerdict, error) {
	if u.Path == "/robots.txt" {
		return robotsVerdict{allowed: true}, nil
	}
	origin := originOf(u)
	r.mu.Lock()
	g, ok := r.cache[origin]
	r.mu.Unlock()
	var fetched time.Time
	if !ok {
		var wait time.Duration
		var err error
		g, wait, fetched, err = r.load(ctx, origin)
		if err != nil || wait > 0 {
			return robotsVerdict{wait: wait}, err
		}
		r.mu.Lock()
		if len(r.cache) >= robotsCacheSize {
			clear(r.cache)
		}
		r.cache[origin] = g
		r.mu.Unlock()
	}
	path := u.EscapedPath()
	if u.RawQuery != "" {
		path += "?" + u.RawQuery
	}
	return robotsVerdict{allowed: g.Test(path), delay: g.CrawlDelay, fetched: fetched}, nil
}

// originOf is u's scheme://host[:port], the host lower-cased and the scheme's default
// port dropped: one robots.txt per origin, whatever way a URL writes it.
func originOf(u *url.URL) string {
	scheme, host := strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	if h, port, err := net.SplitHostPort(host); err == nil && (scheme == "http" && port == "80" || scheme == "https" && port == "443") {
		host = h
		if strings.Contains(h, ":") {
			host = "[" + h + "]"
		}
	}
	return scheme + "://" + host
}

// load returns the rules of origin from Redis, or fetches them if this process wins the
// lock (and when the fetch started); otherwise it returns how long to wait.
func (r *robots) load(ctx context.Context, origin string) (g *robotstxt.Group, wait time.Duration, fetched time.Time, err error) {
	keys := r.layout.ForHost(hostOf(origin))
	key := keys.Robots(origin)
	stored, err := r.rdb.Get(ctx, key).Result()
	if err == nil {
		return r.parse(stored), 0, time.Time{}, nil
	}
	if !errors.Is(err, redis.Nil) {
		return nil, 0, time.Time{}, fmt.Errorf("handlers: read robots.txt of %s: %w", origin, err)
	}
	won, err := r.rdb.SetNX(ctx, keys.RobotsLock(origin), "1", robotsLockTTL).Result()
	if err != nil {
		return nil, 0, time.Time{}, fmt.Errorf("handlers: lock robots.txt of %s: %w", origin, err)
	}
	if !won {
		return nil, robotsWait, time.Time{}, nil
	}
	fetched = time.Now()
	stored = r.fetch(ctx, origin)
	if err := r.rdb.Set(ctx, key, stored, RobotsTTL).Err(); err != nil {
		return nil, 0, time.Time{}, fmt.Errorf("handlers: store robots.txt of %s: %w", origin, err)
	}
	_ = r.rdb.Del(ctx, keys.RobotsLock(origin)).Err()
	return r.parse(stored), 0, fetched, nil
}

// fetch gets origin's robots.txt and returns it as stored: "<status>\n<body>". A
// network failure is stored as status 0, which allows everything (like a 404), so that
// an unreachable robots.txt does not stall the host forever; its pages then fail and
// are retried on their own.
func (r *robots) fetch(ctx context.Context, origin string) string {
	if r.counters != nil {
		r.counters.Add("robots_fetched", 1)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, origin+"/robots.txt", nil)
	if err != nil {
		return "0\n"
	}
	req.Header.Set("User-Agent", r.agent)
	resp, err := r.client.Do(req)
	if err != nil {
		r.log.Info("robots.txt unreachable; allowing all", zap.String("origin", origin), zap.Error(err))
		return "0\n"
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, robotsMaxBytes))
	return strconv.Itoa(resp.StatusCode) + "\n" + string(body)
}

// parse turns a stored robots.txt into the group for our user agent.
func (r *robots) parse(stored string) *robotstxt.Group {
	statusLine, body, _ := strings.Cut(stored, "\n")
	status, _ := strconv.Atoi(statusLine)
	if status == 0 {
		status = http.StatusNotFound // unreachable: allow all
	}
	data, err := robotstxt.FromStatusAndBytes(status, []byte(body))
	if err != nil {
		data, _ = robotstxt.FromStatusAndBytes(http.StatusNotFound, nil)
	}
	return data.FindGroup(r.agent)
}
