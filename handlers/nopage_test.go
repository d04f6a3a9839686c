package handlers_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/spiders"
)

// What a crawl whose start URLs all failed says: an error wrapping ErrNoPageFetched
// that names each start URL and what became of it, within the bounds the crawl's own
// settings give (retries: RetryBase doubling, max_retries times; robots.txt:
// RobotsRetry doubling between robots_unreachable_tries fetches).

// closedPort returns a loopback address where nothing listens (a port just freed).
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// statusSite answers robots.txt with robots (200, or the code when robots is a
// number) and each other path with the code codes gives it (200 when absent).
func statusSite(robots string, codes map[string]int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			if robots == "503" {
				http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
				return
			}
			w.Write([]byte(robots))
			return
		}
		if c, ok := codes[r.URL.Path]; ok {
			http.Error(w, http.StatusText(c), c)
			return
		}
		w.Write([]byte("<h1>a page</h1>"))
	})
}

func TestCrawlWhoseStartURLsAllFailSaysWhatBecameOfEach(t *testing.T) {
	t.Parallel()
	down := "http://" + closedPort(t)
	site := serve(t, statusSite("", map[string]int{"/missing": 404, "/gone": 410, "/broken": 500}))
	sick := serve(t, statusSite("503", nil))
	noRobots := new(bool)
	tests := []struct {
		name   string
		starts []string
		robots *bool // obey_robots; nil: the default, obeyed
		// want matches the whole error; dropped says whether it wraps ErrEveryRequestDropped.
		want    string
		dropped bool
	}{
		{name: "404", starts: []string{site + "/missing"},
			want: `^handlers: crawl c404 fetched no page: start URL ` + regexp.QuoteMeta(site+"/missing") + `: answered HTTP 404 \(final, not retried\)$`},
		{name: "nothing-listens", starts: []string{down + "/"}, robots: noRobots,
			want: `^handlers: crawl cnothing-listens fetched no page: start URL ` + regexp.QuoteMeta(down+"/") +
				`: gave up after 2 retries: Get "` + regexp.QuoteMeta(down+"/") + `": dial tcp .*connect: connection refused$`},
		{name: "nothing-listens-robots", starts: []string{down + "/"},
			want: `^handlers: crawl cnothing-listens-robots fetched no page: every request was dropped: 1 with a host whose robots.txt stayed unreachable \(it answered 5xx or nothing for each of robots_unreachable_tries: .*\); ` +
				`start URL ` + regexp.QuoteMeta(down+"/") + `: robots.txt of ` + regexp.QuoteMeta(down) + ` unreachable after 2 tries \(last: .*connect: connection refused\)$`,
			dropped: true},
		{name: "robots-503", starts: []string{sick + "/"},
			want: `^handlers: crawl crobots-503 fetched no page: every request was dropped: 1 with a host whose robots.txt stayed unreachable \(.*\); ` +
				`start URL ` + regexp.QuoteMeta(sick+"/") + `: robots.txt of ` + regexp.QuoteMeta(sick) + ` unreachable after 2 tries \(last: .*503.*\)$`,
			dropped: true},
		{name: "three", starts: []string{site + "/missing", site + "/broken", site + "/gone"},
			want: `^handlers: crawl cthree fetched no page: ` +
				`start URL ` + regexp.QuoteMeta(site+"/missing") + `: answered HTTP 404 or 410 \(final, not retried: 404 ×1, 410 ×1\); ` +
				`start URL ` + regexp.QuoteMeta(site+"/broken") + `: gave up after 2 retries: HTTP 500; ` +
				`start URL ` + regexp.QuoteMeta(site+"/gone") + `: answered HTTP 404 or 410 \(final, not retried: 404 ×1, 410 ×1\)$`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sp := followSpider("c"+tt.name, tt.starts[0], spiders.Settings{AllowNetworks: []string{"127.0.0.1/32"},
				MaxRetries: new(2), RobotsUnreachableTries: 2, ObeyRobots: tt.robots})
			sp.StartURLs = tt.starts
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			began := time.Now()
			st, err := handlers.Crawl(ctx, sp, quick(handlers.Options{Sink: newMemSink(), Logger: zap.NewNop(), RobotsRetry: 100 * time.Millisecond}))
			if err == nil || !regexp.MustCompile(tt.want).MatchString(err.Error()) {
				t.Fatalf("error (-want +got):\n-%s\n+%v", tt.want, err)
			}
			if !errors.Is(err, handlers.ErrNoPageFetched) || errors.Is(err, handlers.ErrEveryRequestDropped) != tt.dropped {
				t.Errorf("errors.Is ErrNoPageFetched %v, ErrEveryRequestDropped %v; want true, %v",
					errors.Is(err, handlers.ErrNoPageFetched), errors.Is(err, handlers.ErrEveryRequestDropped), tt.dropped)
			}
			if st == nil || !st.Done || st.Stats["pages_fetched"] != 0 {
				t.Errorf("status %+v, want done with no page", st)
			}
			t.Logf("ended in %v: %v", time.Since(began).Round(time.Millisecond), err)
		})
	}
}

// TestCrawlThatFetchedAPageIsNoFailure: one start URL answers 404, the other a page: no
// error (the crawl fetched something), whatever became of the first.
func TestCrawlThatFetchedAPageIsNoFailure(t *testing.T) {
	t.Parallel()
	site := serve(t, statusSite("", map[string]int{"/missing": 404}))
	sp := followSpider("onegood", site+"/missing", spiders.Settings{AllowNetworks: []string{"127.0.0.1/32"}})
	sp.StartURLs = append(sp.StartURLs, site+"/")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := handlers.Crawl(ctx, sp, quick(handlers.Options{Sink: newMemSink(), Logger: zap.NewNop()}))
	if err != nil || st.Stats["pages_fetched"] != 1 || st.Stats["http_errors_final"] != 1 {
		t.Fatalf("crawl with one good start URL: %v, pages %d, final errors %d; want no error, 1, 1", err, st.Stats["pages_fetched"], st.Stats["http_errors_final"])
	}
	if len(st.Warnings) != 0 || strings.Contains(strings.Join(st.Warnings, " "), "dropped") {
		t.Errorf("warnings %q, want none", st.Warnings)
	}
}
