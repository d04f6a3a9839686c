package fetch

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestEmptyCookieJarIsReadAgainOnlyAfterAnAdd: a process that found a site's shared
// jar empty reuses that past cookieEmptyTTL while no save added a cookie in the site's
// partition (a cookie written around the save script stays unseen: no read was made),
// and reads the jar again, sending the cookie, once another process's save added one.
// The clock is moved by ageing the cache's entries, not by waiting.
func TestEmptyCookieJarIsReadAgainOnlyAfterAnAdd(t *testing.T) {
	t.Parallel()
	rdb := streamstest.Start(t).Client()
	ctx := context.Background()
	layout := streams.NewLayout("cookie-gen", 4)
	a := newCookieStore(spiders.CookiesShared, rdb, layout, nil)
	b := newCookieStore(spiders.CookiesShared, rdb, layout, nil)
	u, _ := url.Parse("http://127.0.0.9:8080/page")
	sent := func(s *cookieStore, u *url.URL) int {
		t.Helper()
		j, _, err := s.jar(ctx, defaultCookieSession, u)
		if err != nil {
			t.Fatal(err)
		}
		return len(j.Cookies(u))
	}
	age := func(s *cookieStore) { // past cookieEmptyTTL, and the counters due for a read
		s.mu.Lock()
		for k, e := range s.empty {
			e.at = e.at.Add(-2 * cookieEmptyTTL)
			s.empty[k] = e
		}
		for i := range s.adds {
			s.adds[i].at = time.Time{}
		}
		s.mu.Unlock()
	}
	if n := sent(a, u); n != 0 {
		t.Fatalf("%d cookies sent from an empty jar", n)
	}
	key, part := a.key(defaultCookieSession, spiders.HostKeyName(spiders.HostKeyOf(u)))
	// Written around the script: the partition's counter does not move, the cached
	// empty jar stays good.
	if err := rdb.HSet(ctx, key, "x|127.0.0.9|/", u.String()+"\nx=1").Err(); err != nil {
		t.Fatal(err)
	}
	age(a)
	if n := sent(a, u); n != 0 {
		t.Fatalf("%d cookies sent: the empty jar was read again though no save added a cookie", n)
	}
	// A save of another process adds one in the partition: the jar is read again.
	rec := &recordingJar{Jar: newJar(), s: b}
	rec.SetCookies(u, []*http.Cookie{{Name: "session", Value: "abc"}})
	if err := b.save(ctx, defaultCookieSession, rec.set); err != nil {
		t.Fatal(err)
	}
	if n, _ := rdb.HGet(ctx, layout.Parts[part].Stats, cookieAdds).Int64(); n != 1 {
		t.Fatalf("partition counter %s = %d after one save that added a cookie, want 1", cookieAdds, n)
	}
	age(a)
	if n := sent(a, u); n != 2 {
		t.Fatalf("%d cookies sent after another process's save added one, want 2 (its and the one written beside)", n)
	}
	// A site of another partition keeps its empty jar cached across the add.
	var other *url.URL
	var otherKey string
	for i := 10; other == nil; i++ {
		o, _ := url.Parse("http://127.0.0." + strconv.Itoa(i) + ":8080/page")
		if k, p := a.key(defaultCookieSession, spiders.HostKeyName(spiders.HostKeyOf(o))); p != part {
			other, otherKey = o, k
		}
	}
	if n := sent(a, other); n != 0 {
		t.Fatalf("%d cookies sent from an empty jar", n)
	}
	if err := rdb.HSet(ctx, otherKey, "x|127.0.0.10|/", other.String()+"\nx=1").Err(); err != nil {
		t.Fatal(err)
	}
	age(a)
	if n := sent(a, other); n != 0 {
		t.Fatalf("%d cookies sent: an empty jar of a partition without an add was read again", n)
	}
}
