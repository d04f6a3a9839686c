package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestExporterFollowsTheFleet: the exporter without --crawl serves the crawls of the
// fleet's registry as they come and go: a crawl submitted after it started shows up with
// its state and figures, and its requests waiting count in the fleet's ready work while
// it is active; paused, they no longer do; deleted, every series of it goes.
func TestExporterFollowsTheFleet(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	url := srv.URL()
	rdb := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ex := startProc(t, "exporter-fleet", nil, "exporter", "--redis", url, "--metrics-addr", "127.0.0.1:0")
	addr := metricsAddr(t, ex)
	s := scrape(t, addr)
	if n, ok := s["streamcrawl_fleet_ready_requests"]; !ok || n != 0 || s.sum("streamcrawl_crawl_state") != 0 {
		t.Errorf("exporter of an empty fleet: ready requests %v (served %v), %v crawl states; want 0, served, none",
			n, ok, s.sum("streamcrawl_crawl_state"))
	}

	// waitFor scrapes until ok holds, failing after a while.
	waitFor := func(what string, ok func(s series) bool) series {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			s := scrape(t, addr)
			if ok(s) {
				return s
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: never scraped; last scrape:\n%s\nexporter stderr:\n%s", what, fleetSeries(s), tail(ex.Stderr(), 3000))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	fleetCLI(t, "submitted crawl alpha version 1 (queued)", "submit", fleetSpider(t, "alpha"), "--redis", url)
	fleetCLI(t, "submitted crawl beta version 1 (queued)", "submit", fleetSpider(t, "beta"), "--redis", url)
	// alpha has keys with three requests no fetcher has read; beta has none yet.
	k := streams.NewKeys("alpha")
	cmds := [][]any{{"HSET", k.Meta, "partitions", 1, "seeded_at", "2026-01-01T00:00:00Z"}}
	for _, p := range []string{"a", "b", "c"} {
		cmds = append(cmds, []any{"XADD", k.Requests, "*", "payload", p})
	}
	for _, c := range cmds {
		if err := rdb.Do(ctx, c...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	s = waitFor("alpha and beta queued, alpha's 3 requests ready", func(s series) bool {
		return s.sum("streamcrawl_crawl_state", `crawl="alpha"`, `state="queued"`) == 1 &&
			s.sum("streamcrawl_crawl_state", `crawl="beta"`, `state="queued"`) == 1 &&
			s.sum("streamcrawl_fleet_ready_requests") == 3
	})
	if v := s.sum("streamcrawl_crawl_scrape_ok", `crawl="alpha"`); v != 1 {
		t.Errorf("streamcrawl_crawl_scrape_ok of alpha: %v, want 1", v)
	}
	if v := s.sum("streamcrawl_ready_work", `crawl="alpha"`, `stage="fetch"`); v != 3 {
		t.Errorf("streamcrawl_ready_work of alpha's fetch: %v, want 3", v)
	}
	if v := s.sum("streamcrawl_crawl_state", `crawl="alpha"`); v != 1 {
		t.Errorf("alpha in %v states, want one:\n%s", v, fleetSeries(s))
	}

	fleetCLI(t, "crawl alpha: paused", "pause", "--crawl", "alpha", "--redis", url)
	waitFor("alpha paused, its requests no longer ready", func(s series) bool {
		return s.sum("streamcrawl_crawl_state", `crawl="alpha"`, `state="paused"`) == 1 &&
			s.sum("streamcrawl_crawl_state", `crawl="alpha"`) == 1 && s.sum("streamcrawl_fleet_ready_requests") == 0
	})

	fleetCLI(t, "", "delete", "--crawl", "alpha", "--redis", url)
	s = waitFor("alpha deleted", func(s series) bool {
		for k := range s {
			if strings.Contains(k, `crawl="alpha"`) {
				return false
			}
		}
		return true
	})
	if v := s.sum("streamcrawl_crawl_state", `crawl="beta"`, `state="queued"`); v != 1 {
		t.Errorf("beta after alpha was deleted: state queued %v, want 1", v)
	}
}

// fleetSeries is the fleet's series of a scrape, for a failure's message.
func fleetSeries(s series) string {
	var b strings.Builder
	for k, v := range s {
		if strings.Contains(k, "crawl_state") || strings.Contains(k, "fleet_ready") || strings.Contains(k, "scrape_ok") {
			fmt.Fprintf(&b, "%s %v\n", k, v)
		}
	}
	return b.String()
}
