package fetch

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// hgetalls returns the HGETALL calls Redis ran since its stats were last reset.
func hgetalls(t *testing.T, rdb *redis.Client) int {
	t.Helper()
	raw, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(raw, "\n") {
		if rest, ok := strings.CutPrefix(line, "cmdstat_hgetall:calls="); ok {
			n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
			return n
		}
	}
	return 0
}

// cookiesOf returns the Cookie header store s sends to u.
func cookiesOf(t *testing.T, s *cookieStore, u *url.URL) string {
	t.Helper()
	j, _, err := s.jar(context.Background(), defaultCookieSession, u)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range j.Cookies(u) {
		out = append(out, c.Name+"="+c.Value)
	}
	return strings.Join(out, "; ")
}

// TestSharedJarIsNotReadUntilACookieIsWritten: in a crawl where no site set a cookie,
// a fetch reads no cookie hash (a broad crawl paid an HGETALL for about every page of a
// host that came back to another process); once one process saves a cookie, the other
// sends it (after its once-a-second read of the counters, forced here), and a site that
// sends the same cookie again writes nothing and makes no process read the jar again.
func TestSharedJarIsNotReadUntilACookieIsWritten(t *testing.T) {
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	layout := streams.NewLayout("jar", 1)
	a := newCookieStore(spiders.CookiesShared, rdb, layout, nil)
	b := newCookieStore(spiders.CookiesShared, rdb, layout, nil)
	u, _ := url.Parse("http://127.0.0.1:8080/p/1")

	if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if got := cookiesOf(t, a, u); got != "" {
			t.Fatalf("cookies %q before any was set", got)
		}
	}
	if n := hgetalls(t, rdb); n != 0 {
		t.Fatalf("%d jar reads in a crawl without cookies, want 0", n)
	}

	set := func(s *cookieStore, value string) {
		t.Helper()
		j, save, err := s.jar(ctx, defaultCookieSession, u)
		if err != nil {
			t.Fatal(err)
		}
		j.SetCookies(u, []*http.Cookie{{Name: "sid", Value: value, Path: "/"}})
		if err := save(ctx); err != nil {
			t.Fatal(err)
		}
	}
	set(b, "bob")
	if got := cookiesOf(t, b, u); got != "sid=bob" {
		t.Fatalf("the writer sends %q, want sid=bob", got)
	}
	a.mu.Lock()
	a.storedAt = time.Time{} // the second is up
	a.mu.Unlock()
	if got := cookiesOf(t, a, u); got != "sid=bob" {
		t.Fatalf("the other process sends %q, want sid=bob", got)
	}

	set(b, "bob") // the same again: no write
	if n, err := rdb.HGet(ctx, layout.Global.Stats, cookieWrites).Int64(); err != nil || n != 1 {
		t.Fatalf("cookie_writes %d (%v), want 1: an unchanged cookie is no write", n, err)
	}
	a.mu.Lock()
	for k, c := range a.seen {
		c.at = time.Now().Add(-time.Minute) // older than any TTL: only the counter keeps it
		a.seen[k] = c
	}
	a.storedAt = time.Time{}
	a.mu.Unlock()
	if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if got := cookiesOf(t, a, u); got != "sid=bob" {
		t.Fatalf("sends %q, want sid=bob", got)
	}
	if n := hgetalls(t, rdb); n != 0 {
		t.Fatalf("%d jar reads while nothing was written, want 0", n)
	}

	set(b, "carol") // changed: the other process reads it again
	a.mu.Lock()
	a.storedAt = time.Time{}
	a.mu.Unlock()
	if got := cookiesOf(t, a, u); got != "sid=carol" {
		t.Fatalf("sends %q after a change, want sid=carol", got)
	}
}
