package fetch

import (
	"context"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/net/publicsuffix"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
)

// defaultCookieSession is the cookie session of requests without a cookiejar meta.
const defaultCookieSession = "default"

// cookieStore gives each fetch the cookies of its session. Shared (the default): the
// crawl's jar is in Redis, one hash per session and site, so a cookie one fetch process
// receives is sent by all; each fetch loads its site's cookies into a jar of its own and
// writes back what it was sent. Process: one jar per session in memory. Off: none.
type cookieStore struct {
	mode   string
	rdb    redis.UniversalClient
	layout streams.Layout

	mu    sync.Mutex
	local map[string]*cookiejar.Jar // process mode, by session
	// seen caches the shared jar's hashes for cookieCacheTTL (an empty one for
	// cookieEmptyTTL), so that a crawl of a site that sets no cookies (or the same ones)
	// costs no round trip per fetch; a cookie another process saved is sent by this one
	// at most that much later.
	seen map[string]cachedCookies
}

// cookieCacheTTL is how long a process reuses a shared jar hash it read.
const cookieCacheTTL = time.Second

// cookieEmptyTTL is how long a process reuses a shared jar hash it found empty: most
// sites of a broad crawl set no cookie, and a host's pages come to one process about
// once a second (measured: one HGETALL per page at a 500 ms per-host delay with 1 s).
const cookieEmptyTTL = 5 * time.Second

// cookieCacheSize bounds the cache (it is cleared when full).
const cookieCacheSize = 10000

type cachedCookies struct {
	at   time.Time
	vals map[string]string
}

func newCookieStore(mode string, rdb redis.UniversalClient, layout streams.Layout) *cookieStore {
	if mode == "" {
		mode = spiders.CookiesShared
	}
	if mode == spiders.CookiesShared && rdb == nil {
		mode = spiders.CookiesProcess // no Redis (unit tests of Fetch): keep them here
	}
	return &cookieStore{mode: mode, rdb: rdb, layout: layout, local: map[string]*cookiejar.Jar{}, seen: map[string]cachedCookies{}}
}

// sessionOf returns the cookie session of req: its cookiejar meta, else the default.
func sessionOf(req *spiders.Request) string {
	if v, ok := req.Meta["cookiejar"]; ok && v != nil {
		if s := fmt.Sprint(v); s != "" {
			return s
		}
	}
	return defaultCookieSession
}

func newJar() *cookiejar.Jar {
	j, _ := cookiejar.New(&cookiejar.Options{PublicSuffixList: publicsuffix.List}) // never fails
	return j
}

// jar returns the jar for one fetch of u in session (nil when cookies are off) and the
// function that saves, after the fetch, what the server set.
func (s *cookieStore) jar(ctx context.Context, session string, u *url.URL) (http.CookieJar, func(context.Context) error, error) {
	switch s.mode {
	case spiders.CookiesOff:
		return nil, func(context.Context) error { return nil }, nil
	case spiders.CookiesProcess:
		s.mu.Lock()
		defer s.mu.Unlock()
		j := s.local[session]
		if j == nil {
			j = newJar()
			s.local[session] = j
		}
		return j, func(context.Context) error { return nil }, nil
	}
	j := &recordingJar{Jar: newJar()}
	host := spiders.HostKeyName(spiders.HostKeyOf(u))
	stored, err := s.load(ctx, s.key(session, host))
	if err != nil {
		return nil, nil, fmt.Errorf("fetch: load cookies of %s: %w", host, err)
	}
	for _, v := range stored {
		from, line, ok := strings.Cut(v, "\n")
		fu, err := url.Parse(from)
		c, cerr := http.ParseSetCookie(line)
		if ok && err == nil && cerr == nil {
			j.Jar.SetCookies(fu, []*http.Cookie{c})
		}
	}
	return j, func(ctx context.Context) error { return s.save(ctx, session, j.set) }, nil
}

// load returns the shared jar's hash key, from the cache when it is fresh.
func (s *cookieStore) load(ctx context.Context, key string) (map[string]string, error) {
	s.mu.Lock()
	c, ok := s.seen[key]
	s.mu.Unlock()
	if ok && (time.Since(c.at) < cookieCacheTTL || len(c.vals) == 0 && time.Since(c.at) < cookieEmptyTTL) {
		return c.vals, nil
	}
	vals, err := s.rdb.HGetAll(ctx, key).Result()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if len(s.seen) >= cookieCacheSize {
		clear(s.seen)
	}
	s.seen[key] = cachedCookies{at: time.Now(), vals: vals}
	s.mu.Unlock()
	return vals, nil
}

// forget drops key from the cache: this process just changed it.
func (s *cookieStore) forget(key string) {
	s.mu.Lock()
	delete(s.seen, key)
	s.mu.Unlock()
}

// key is the Redis hash of session's cookies for host's site (host: a host key's name).
func (s *cookieStore) key(session, host string) string {
	site, err := publicsuffix.EffectiveTLDPlusOne(host)
	if err != nil {
		site = host // an IP address, localhost
	}
	return s.layout.ForHost(site).Cookies(session, site)
}

// save writes the cookies a fetch was sent to the shared jar; expired and deleted ones
// are removed from it.
func (s *cookieStore) save(ctx context.Context, session string, set []setCookie) error {
	if len(set) == 0 {
		return nil
	}
	now := time.Now()
	var changed []string
	pipe := s.rdb.Pipeline()
	for _, sc := range set {
		c := *sc.c
		host := spiders.HostKeyName(spiders.HostKeyOf(sc.u))
		domain := strings.ToLower(strings.TrimPrefix(c.Domain, "."))
		if domain == "" {
			domain = host
		}
		field := c.Name + "|" + domain + "|" + c.Path
		if c.MaxAge > 0 { // stored as an absolute time: reloading must not extend it
			c.Expires, c.MaxAge = now.Add(time.Duration(c.MaxAge)*time.Second), 0
		}
		key := s.key(session, host)
		changed = append(changed, key)
		if c.MaxAge < 0 || !c.Expires.IsZero() && c.Expires.Before(now) {
			pipe.HDel(ctx, key, field)
			continue
		}
		from := url.URL{Scheme: sc.u.Scheme, Host: sc.u.Host, Path: sc.u.Path}
		pipe.HSet(ctx, key, field, from.String()+"\n"+c.String())
	}
	_, err := pipe.Exec(ctx)
	for _, key := range changed { // after the write: a read in between must not be kept
		s.forget(key)
	}
	if err != nil {
		return fmt.Errorf("fetch: save cookies: %w", err)
	}
	return nil
}

// setCookie is a cookie a server set and the URL that set it.
type setCookie struct {
	u *url.URL
	c *http.Cookie
}

// recordingJar is a jar that remembers what it was given.
type recordingJar struct {
	*cookiejar.Jar
	mu  sync.Mutex
	set []setCookie
}

func (j *recordingJar) SetCookies(u *url.URL, cookies []*http.Cookie) {
	j.Jar.SetCookies(u, cookies)
	j.mu.Lock()
	for _, c := range cookies {
		j.set = append(j.set, setCookie{u: u, c: c})
	}
	j.mu.Unlock()
}
