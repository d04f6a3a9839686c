package fetch

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestValidatorsKeptOnlyForURLsFetchedAgain: validators are looked up and kept for a
// URL that may be fetched again (revisit.after, a rule matching it, dont_filter) and for
// no other, POSTs never.
func TestValidatorsKeptOnlyForURLsFetchedAgain(t *testing.T) {
	rules := []spiders.RevisitRule{{Match: `/news/`, Min: time.Minute, Max: time.Hour}}
	for _, c := range []struct {
		name   string
		rv     spiders.RevisitSettings
		url    string
		method string
		dont   bool
		want   bool
	}{
		{"one-off crawl", spiders.RevisitSettings{}, "http://a.example/news/1", "", false, false},
		{"one-off crawl, dont_filter", spiders.RevisitSettings{}, "http://a.example/news/1", "", true, true},
		{"rule matches", spiders.RevisitSettings{Rules: rules}, "http://a.example/news/1", "", false, true},
		{"no rule matches", spiders.RevisitSettings{Rules: rules}, "http://a.example/shop/1", "", false, false},
		{"after", spiders.RevisitSettings{After: time.Hour}, "http://a.example/shop/1", "", false, true},
		{"forget_after", spiders.RevisitSettings{ForgetAfter: time.Hour}, "http://a.example/shop/1", "", false, false},
		{"post", spiders.RevisitSettings{After: time.Hour}, "http://a.example/shop/1", http.MethodPost, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			// No lookup reaches Redis unless the URL is kept: a nil client would panic.
			v := newValidators(nil, streams.NewLayout("kept", 1), spiders.Settings{Revisit: c.rv})
			req := &spiders.Request{URL: c.url, Method: c.method, DontFilter: c.dont}
			hreq, err := http.NewRequest(req.HTTPMethod(), req.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := hreq.Method == http.MethodGet && v.revisited(req); got != c.want {
				t.Fatalf("kept %v, want %v", got, c.want)
			}
			if !c.want {
				if cond, err := v.apply(context.Background(), req, hreq); cond != nil || err != nil {
					t.Fatalf("apply: %+v, %v; want nothing", cond, err)
				}
			}
		})
	}
}

// TestValidatorsAreForgottenWithTheCrawl: with forget_after, validators saved in one
// generation are sent through the next and forgotten after it (between forget_after and
// twice it after they were written); a 304 carries them into its generation, so a page
// that keeps answering 304 keeps them. Each generation's buckets expire when it is read
// no more. On a real Redis, the fetcher's clock moved by the test.
func TestValidatorsAreForgottenWithTheCrawl(t *testing.T) {
	rdb := streamstest.Start(t).Client()
	ctx := context.Background()
	const forget = time.Hour
	l := streams.NewLayout("forget", 1)
	v := newValidators(rdb, l, spiders.Settings{Capacity: 64,
		Revisit: spiders.RevisitSettings{ForgetAfter: forget, Rules: []spiders.RevisitRule{{Min: time.Minute, Max: time.Hour}}}})
	f := forget.Milliseconds()
	g := time.Now().UnixMilli()/f + 1 // a generation to come: its keys' expiry is ahead of the Redis clock
	var now time.Time
	v.now = func() time.Time { return now }
	// visit asks for u at time at as the fetcher does and returns what it sent.
	visit := func(u string, at time.Time) (*conditional, string) {
		t.Helper()
		now = at
		req := &spiders.Request{URL: u}
		hreq, err := http.NewRequest(http.MethodGet, u, nil)
		if err != nil {
			t.Fatal(err)
		}
		c, err := v.apply(ctx, req, hreq)
		if err != nil || c == nil {
			t.Fatalf("apply %s: %+v, %v", u, c, err)
		}
		return c, hreq.Header.Get("If-None-Match")
	}
	end := time.UnixMilli((g+1)*f - 60_000) // a minute before generation g ends
	for _, u := range []string{"http://a.example/kept", "http://a.example/idle"} {
		c, inm := visit(u, end)
		if inm != "" {
			t.Fatalf("%s: first visit sent If-None-Match %q", u, inm)
		}
		if err := v.save(ctx, c, http.Header{"Etag": {`"e1"`}}); err != nil {
			t.Fatal(err)
		}
		if exp := rdb.PExpireTime(ctx, c.key).Val(); exp != time.Duration(g+2)*time.Duration(f)*time.Millisecond {
			t.Fatalf("%s: key %s expires %v after the epoch, want %v", u, c.key, exp, time.Duration(g+2)*time.Duration(f)*time.Millisecond)
		}
	}
	// Nearly forget_after on, in the next generation: both are sent; only "kept"
	// answers 304.
	later := end.Add(forget - time.Second)
	for _, u := range []string{"http://a.example/kept", "http://a.example/idle"} {
		c, inm := visit(u, later)
		if inm != `"e1"` {
			t.Fatalf("%s at +%v: sent If-None-Match %q, want \"e1\"", u, later.Sub(end), inm)
		}
		if u == "http://a.example/kept" {
			if err := v.notModified(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Past the next generation: "idle" was written more than forget_after ago and is
	// forgotten; "kept" was carried forward by its 304.
	past := time.UnixMilli((g + 2) * f)
	if _, inm := visit("http://a.example/idle", past); inm != "" {
		t.Errorf("idle at +%v: sent If-None-Match %q, want its validators forgotten", past.Sub(end), inm)
	}
	if _, inm := visit("http://a.example/kept", past); inm != `"e1"` {
		t.Errorf("kept at +%v: sent If-None-Match %q, want \"e1\" (carried by its 304)", past.Sub(end), inm)
	}
}
