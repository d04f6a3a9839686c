package fetch

import (
	"context"
	"errors"
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

	counters *streams.Counters // cookies_stored, cookies_refused_*

	mu    sync.Mutex
	local map[string]*limitJar // process mode, by session
	held  int                  // process mode: cookies kept, all sessions
	// stored is the crawl's cookies_stored counter as last read (shared mode), and when.
	stored   int64
	storedAt time.Time
	// seen caches the shared jar's hashes that hold cookies for cookieCacheTTL, so
	// that a crawl of a site that sets the same ones costs no round trip per fetch; a
	// cookie another process saved is sent by this one at most that much later.
	seen map[string]cachedCookies
	// empty caches the shared jar's hashes found empty (most sites of a broad crawl
	// set no cookie): one is good for cookieEmptyTTL, and after that while the
	// cookieAdds counter of its partition has not moved since it was read (see gen).
	empty map[string]emptyJar
	// adds is each partition's cookieAdds counter as last read, and when.
	adds []partAdds
}

// cookieCacheTTL is how long a process reuses a shared jar hash it read.
const cookieCacheTTL = time.Second

// cookieEmptyTTL is how long a process reuses a shared jar hash it found empty
// whatever happened since: most sites of a broad crawl set no cookie, and a host's
// pages come to one process about once a second (measured: one HGETALL per page at a
// 500 ms per-host delay with 1 s). Past it the empty hash is still reused while its
// partition's cookieAdds counter is unchanged, read at most once per cookieCacheTTL.
const cookieEmptyTTL = 5 * time.Second

// cookieAdds is the field of a partition's stats hash that cookieSaveScript bumps
// when a save adds a cookie to one of the partition's jar hashes: a process's empty
// hashes of that partition may have one now.
const cookieAdds = "cookie_adds"

// cookieCacheSize bounds the cache of hashes with cookies (it is cleared when full).
const cookieCacheSize = 10000

// cookieEmptySize bounds the cache of empty hashes (it is cleared when full): about
// 100 bytes each, so a broad crawl's 10,000 hosts do not clear it all the time.
const cookieEmptySize = 50000

// Cookie jar bounds, as browsers keep them (RFC 6265 §6.1 asks for at least 4096 bytes
// per cookie, 50 per domain and 3000 in all; Chrome keeps 180 per domain): without
// them 900 cookies of one site made a 17 KB Cookie header and every page answered 400.
const (
	// maxCookieBytes: a cookie whose name and value are longer is refused.
	maxCookieBytes = 4096
	// maxCookiesPerSite: a site (registrable domain) holds at most this many cookies per
	// session; a new one past it is refused (the ones it has are updated).
	maxCookiesPerSite = 180
	// maxCookiesPerCrawl: the crawl's jar (shared) or the process's (process) holds at
	// most about this many; new ones past it are refused. The shared count is the
	// crawl's cookies_stored counter, read at most once a second.
	maxCookiesPerCrawl = 3000
)

type cachedCookies struct {
	at   time.Time
	vals map[string]string
}

// emptyJar is a jar hash found empty: when, and its partition's cookieAdds then.
type emptyJar struct {
	at   time.Time
	adds int64
}

// partAdds is a partition's cookieAdds counter as read at a time.
type partAdds struct {
	n  int64
	at time.Time
}

func newCookieStore(mode string, rdb redis.UniversalClient, layout streams.Layout, counters *streams.Counters) *cookieStore {
	if mode == "" {
		mode = spiders.CookiesShared
	}
	if mode == spiders.CookiesShared && rdb == nil {
		mode = spiders.CookiesProcess // no Redis (unit tests of Fetch): keep them here
	}
	return &cookieStore{mode: mode, rdb: rdb, layout: layout, counters: counters, local: map[string]*limitJar{}, seen: map[string]cachedCookies{},
		empty: map[string]emptyJar{}, adds: make([]partAdds, len(layout.Parts))}
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
			j = s.newLimitJar()
			s.local[session] = j
		}
		return j, func(context.Context) error { return nil }, nil
	}
	j := &recordingJar{Jar: newJar(), s: s}
	host := spiders.HostKeyName(spiders.HostKeyOf(u))
	key, part := s.key(session, host)
	stored, err := s.load(ctx, key, part)
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

// load returns the shared jar's hash key (in partition part), from the cache when it
// is fresh.
func (s *cookieStore) load(ctx context.Context, key string, part int) (map[string]string, error) {
	adds, addsErr := s.gen(ctx, part) // before the read: a save after it moves the counter
	s.mu.Lock()
	c, ok := s.seen[key]
	e, none := s.empty[key]
	s.mu.Unlock()
	if ok && time.Since(c.at) < cookieCacheTTL {
		return c.vals, nil
	}
	if none && (time.Since(e.at) < cookieEmptyTTL || addsErr == nil && e.adds == adds) {
		return nil, nil
	}
	vals, err := s.rdb.HGetAll(ctx, key).Result()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	delete(s.seen, key)
	delete(s.empty, key)
	switch {
	case len(vals) > 0:
		if len(s.seen) >= cookieCacheSize {
			clear(s.seen)
		}
		s.seen[key] = cachedCookies{at: time.Now(), vals: vals}
	case addsErr == nil:
		if len(s.empty) >= cookieEmptySize {
			clear(s.empty)
		}
		s.empty[key] = emptyJar{at: time.Now(), adds: adds}
	}
	s.mu.Unlock()
	return vals, nil
}

// gen returns partition part's cookieAdds counter, read at most once per
// cookieCacheTTL.
func (s *cookieStore) gen(ctx context.Context, part int) (int64, error) {
	s.mu.Lock()
	a := s.adds[part]
	s.mu.Unlock()
	if !a.at.IsZero() && time.Since(a.at) < cookieCacheTTL {
		return a.n, nil
	}
	at := time.Now()
	n, err := s.rdb.HGet(ctx, s.layout.Parts[part].Stats, cookieAdds).Int64()
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, err
	}
	s.mu.Lock()
	if at.After(s.adds[part].at) {
		s.adds[part] = partAdds{n: n, at: at}
	}
	s.mu.Unlock()
	return n, nil
}

// forget drops key from the cache: this process just changed it.
func (s *cookieStore) forget(key string) {
	s.mu.Lock()
	delete(s.seen, key)
	delete(s.empty, key)
	s.mu.Unlock()
}

// key is the Redis hash of session's cookies for host's site (host: a host key's name)
// and its partition.
func (s *cookieStore) key(session, host string) (string, int) {
	site, err := publicsuffix.EffectiveTLDPlusOne(host)
	if err != nil {
		site = host // an IP address, localhost
	}
	part := s.layout.PartitionOf(site)
	return s.layout.Parts[part].Cookies(session, site), part
}

// save writes the cookies a fetch was sent to the shared jar, one script call per
// site hash (cookieSaveScript): expired and deleted ones are removed from it, and a new
// one is refused when its site holds maxCookiesPerSite or the crawl about
// maxCookiesPerCrawl.
func (s *cookieStore) save(ctx context.Context, session string, set []setCookie) error {
	if len(set) == 0 {
		return nil
	}
	now := time.Now()
	crawlFull := s.crawlFull(ctx)
	byKey, stats := map[string][]any{}, map[string]string{}
	var keys []string
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
		key, part := s.key(session, host)
		if _, ok := byKey[key]; !ok {
			keys = append(keys, key)
			stats[key] = s.layout.Parts[part].Stats
		}
		if c.MaxAge < 0 || !c.Expires.IsZero() && c.Expires.Before(now) {
			byKey[key] = append(byKey[key], "del", field, "")
			continue
		}
		op := "set"
		if crawlFull {
			op = "upd" // only a cookie the jar has already is written
		}
		from := url.URL{Scheme: sc.u.Scheme, Host: sc.u.Host, Path: sc.u.Path}
		byKey[key] = append(byKey[key], op, field, from.String()+"\n"+c.String())
	}
	var errs []error
	for _, key := range keys { // one site per fetch, nearly always
		out, err := cookieSaveScript.Run(ctx, s.rdb, []string{key, stats[key]}, append([]any{maxCookiesPerSite}, byKey[key]...)...).Int64Slice()
		s.forget(key) // after the write: a read in between must not be kept
		if err == nil && len(out) == 3 {
			s.count("cookies_stored", out[0]-out[1])
			s.count("cookies_refused_over_cap", out[2])
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("fetch: save cookies: %w", err)
	}
	return nil
}

// cookieSaveScript writes a fetch's cookies to one site hash of the shared jar: a
// deleted or expired one is removed; one it has is updated; a new one is added while
// the hash holds fewer than the cap ("set") and refused otherwise, or always ("upd":
// the crawl's jar is full). When one was added it bumps the partition's cookieAdds
// counter, so that processes that found the hash empty read it again.
//
// KEYS[1] -> sc:{c}:cookies:<session>:<site>
// KEYS[2] -> sc:{c}:stats (the partition's)
// ARGV[1] -> the most cookies the hash holds; then per cookie: op ("set", "upd",
// "del"), field, value
// Output: {added, removed, refused}
var cookieSaveScript = redis.NewScript(`
local cap, added, removed, refused = tonumber(ARGV[1]), 0, 0, 0
for i = 2, #ARGV, 3 do
  local op, field = ARGV[i], ARGV[i + 1]
  if op == 'del' then
    removed = removed + redis.call('HDEL', KEYS[1], field)
  elseif redis.call('HEXISTS', KEYS[1], field) == 1 then
    redis.call('HSET', KEYS[1], field, ARGV[i + 2])
  elseif op == 'set' and redis.call('HLEN', KEYS[1]) < cap then
    redis.call('HSET', KEYS[1], field, ARGV[i + 2])
    added = added + 1
  else
    refused = refused + 1
  end
end
if added > 0 then redis.call('HINCRBY', KEYS[2], '` + cookieAdds + `', 1) end
return {added, removed, refused}
`)

// crawlFull reports whether the crawl's shared jar holds about maxCookiesPerCrawl
// cookies (its cookies_stored counter, read at most once a second).
func (s *cookieStore) crawlFull(ctx context.Context) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if time.Since(s.storedAt) >= time.Second {
		if n, err := s.rdb.HGet(ctx, s.layout.Global.Stats, "cookies_stored").Int64(); err == nil || errors.Is(err, redis.Nil) {
			s.stored, s.storedAt = n, time.Now()
		}
	}
	return s.stored >= maxCookiesPerCrawl
}

func (s *cookieStore) count(field string, n int64) {
	if s.counters != nil && n != 0 {
		s.counters.Add(field, n)
	}
}

// keep drops the cookies a jar must not take: those over maxCookieBytes (counted).
func (s *cookieStore) keep(cookies []*http.Cookie) []*http.Cookie {
	out := cookies[:0:0]
	for _, c := range cookies {
		if len(c.Name)+len(c.Value) > maxCookieBytes {
			s.count("cookies_refused_too_large", 1)
			continue
		}
		out = append(out, c)
	}
	return out
}

// setCookie is a cookie a server set and the URL that set it.
type setCookie struct {
	u *url.URL
	c *http.Cookie
}

// recordingJar is a jar that remembers what it was given (a fetch's, in shared mode),
// cookies over maxCookieBytes left out.
type recordingJar struct {
	*cookiejar.Jar
	s   *cookieStore
	mu  sync.Mutex
	set []setCookie
}

func (j *recordingJar) SetCookies(u *url.URL, cookies []*http.Cookie) {
	cookies = j.s.keep(cookies)
	j.Jar.SetCookies(u, cookies)
	j.mu.Lock()
	for _, c := range cookies {
		j.set = append(j.set, setCookie{u: u, c: c})
	}
	j.mu.Unlock()
}

// limitJar is a process's jar of one session (process mode) within the bounds: no
// cookie over maxCookieBytes, at most maxCookiesPerSite names per site, about
// maxCookiesPerCrawl in the process. It counts the names it let in (a deleted one is
// let go); names of expired cookies stay counted until set again.
type limitJar struct {
	*cookiejar.Jar
	s     *cookieStore
	names map[string]map[string]bool // site -> cookie names (name|domain|path)
}

// newLimitJar returns an empty jar of one session in process mode.
func (s *cookieStore) newLimitJar() *limitJar {
	return &limitJar{Jar: newJar(), s: s, names: map[string]map[string]bool{}}
}

func (j *limitJar) SetCookies(u *url.URL, cookies []*http.Cookie) {
	cookies = j.s.keep(cookies)
	host := spiders.HostKeyName(spiders.HostKeyOf(u))
	site, err := publicsuffix.EffectiveTLDPlusOne(host)
	if err != nil {
		site = host
	}
	j.s.mu.Lock()
	names := j.names[site]
	if names == nil {
		names = map[string]bool{}
		j.names[site] = names
	}
	out := cookies[:0:0]
	for _, c := range cookies {
		name := c.Name + "|" + strings.ToLower(strings.TrimPrefix(c.Domain, ".")) + "|" + c.Path
		switch {
		case c.MaxAge < 0:
			if names[name] {
				delete(names, name)
				j.s.held--
			}
		case names[name]:
		case len(names) >= maxCookiesPerSite || j.s.held >= maxCookiesPerCrawl:
			j.s.count("cookies_refused_over_cap", 1)
			continue
		default:
			names[name] = true
			j.s.held++
		}
		out = append(out, c)
	}
	j.s.mu.Unlock()
	j.Jar.SetCookies(u, out)
}
