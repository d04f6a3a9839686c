package fetch

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/streamcrawl/streamcrawl/handlers/fetch/browser"
	"github.com/streamcrawl/streamcrawl/spiders"
)

// Cookies of rendered pages: the crawl's jar (in Redis when shared) is loaded into
// the page's browser context before it loads, and what the page's context holds
// afterwards is written back, so the HTTP fetcher and the browser share one session.

// forBrowser returns the cookies of session for u's site, as the browser sets them.
func (s *cookieStore) forBrowser(ctx context.Context, session string, u *url.URL) ([]browser.Cookie, error) {
	switch s.mode {
	case spiders.CookiesOff:
		return nil, nil
	case spiders.CookiesProcess:
		s.mu.Lock()
		j := s.local[session]
		s.mu.Unlock()
		if j == nil {
			return nil, nil
		}
		var out []browser.Cookie
		for _, c := range j.Cookies(u) { // name and value only: set for u's host
			out = append(out, browser.Cookie{From: &url.URL{Scheme: u.Scheme, Host: u.Host, Path: "/"}, Cookie: &http.Cookie{Name: c.Name, Value: c.Value, Path: "/"}})
		}
		return out, nil
	}
	host := spiders.HostKeyName(spiders.HostKeyOf(u))
	key, part := s.key(session, host)
	stored, err := s.load(ctx, key, part)
	if err != nil {
		return nil, fmt.Errorf("fetch: load cookies of %s: %w", host, err)
	}
	out := make([]browser.Cookie, 0, len(stored))
	for _, v := range stored {
		from, line, ok := strings.Cut(v, "\n")
		fu, err := url.Parse(from)
		c, cerr := http.ParseSetCookie(line)
		if ok && err == nil && cerr == nil {
			out = append(out, browser.Cookie{From: fu, Cookie: c})
		}
	}
	return out, nil
}

// fromBrowser saves the cookies a page's context held when it was done that differ
// from what it was given (new, changed, or gone: deleted from the jar).
func (s *cookieStore) fromBrowser(ctx context.Context, session string, given, held []browser.Cookie) error {
	if s.mode == spiders.CookiesOff {
		return nil
	}
	before := map[string]string{}
	for _, c := range given {
		before[cookieID(c)] = c.Value
	}
	var set []setCookie
	for _, c := range held {
		id := cookieID(c)
		if v, ok := before[id]; ok && v == c.Value {
			delete(before, id)
			continue
		}
		delete(before, id)
		set = append(set, setCookie{u: c.From, c: c.Cookie})
	}
	for _, c := range given {
		if _, gone := before[cookieID(c)]; gone {
			d := *c.Cookie
			d.MaxAge = -1
			set = append(set, setCookie{u: c.From, c: &d})
		}
	}
	if len(set) == 0 {
		return nil
	}
	if s.mode == spiders.CookiesProcess {
		s.mu.Lock()
		j := s.local[session]
		if j == nil {
			j = s.newLimitJar()
			s.local[session] = j
		}
		s.mu.Unlock()
		for _, sc := range set {
			j.SetCookies(sc.u, []*http.Cookie{sc.c})
		}
		return nil
	}
	return s.save(ctx, session, set)
}

// cookieID names a cookie as the shared jar does: name, domain (or host), path.
func cookieID(c browser.Cookie) string {
	domain := strings.ToLower(strings.TrimPrefix(c.Domain, "."))
	if domain == "" && c.From != nil {
		domain = spiders.HostKeyName(spiders.HostKeyOf(c.From))
	}
	return c.Name + "|" + domain + "|" + c.Path
}
