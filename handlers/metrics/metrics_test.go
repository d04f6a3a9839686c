package metrics_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/handlers/metrics"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

func TestCountFeedsFetchAndItemMetrics(t *testing.T) {
	m := metrics.New(metrics.Config{Sink: "csv"})
	for ev, n := range map[string]int64{"status_200": 5, "status_503": 2, "status_404": 1, "pages_fetched": 5,
		"retries_scheduled": 2, "retries_exhausted": 1, "robots_waits": 3, "robots_disallowed": 1,
		"dropped_offsite": 4, "dropped_max_pages": 9, "items_stored": 7, "bytes_fetched": 1000} {
		m.Count(ev, n)
	}
	want := `
# HELP streamcrawl_fetch_outcomes_total What became of fetched or skipped requests: fetched, retry, dead_letter, http_error, robots, out_of_scope, politeness_wait.
# TYPE streamcrawl_fetch_outcomes_total counter
streamcrawl_fetch_outcomes_total{outcome="dead_letter"} 1
streamcrawl_fetch_outcomes_total{outcome="fetched"} 5
streamcrawl_fetch_outcomes_total{outcome="out_of_scope"} 4
streamcrawl_fetch_outcomes_total{outcome="politeness_wait"} 3
streamcrawl_fetch_outcomes_total{outcome="retry"} 2
streamcrawl_fetch_outcomes_total{outcome="robots"} 1
# HELP streamcrawl_fetch_responses_total HTTP responses by status class (1xx..5xx).
# TYPE streamcrawl_fetch_responses_total counter
streamcrawl_fetch_responses_total{class="2xx"} 5
streamcrawl_fetch_responses_total{class="4xx"} 1
streamcrawl_fetch_responses_total{class="5xx"} 2
# HELP streamcrawl_items_stored_total Items the store stage wrote to its sink.
# TYPE streamcrawl_items_stored_total counter
streamcrawl_items_stored_total{sink="csv"} 7
# HELP streamcrawl_fetch_bytes_total Body bytes downloaded (decoded).
# TYPE streamcrawl_fetch_bytes_total counter
streamcrawl_fetch_bytes_total 1000
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "streamcrawl_fetch_outcomes_total",
		"streamcrawl_fetch_responses_total", "streamcrawl_items_stored_total", "streamcrawl_fetch_bytes_total"); err != nil {
		t.Error(err)
	}
	var nilM *metrics.Metrics // every method of a nil Metrics is a no-op
	nilM.Count("pages_fetched", 1)
	nilM.SubscriberEvent("fetch", "dead_letter", 1)
}

func TestRedisHookCountsRoundTripsAndRealFailures(t *testing.T) {
	srv := streamstest.Start(t)
	m := metrics.New(metrics.Config{})
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer rdb.Close()
	rdb.AddHook(m.RedisHook())
	ctx := context.Background()
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Get(ctx, "missing").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("get missing: %v", err)
	}
	if err := rdb.LPush(ctx, "k", "x").Err(); err == nil { // WRONGTYPE: a reply error
		t.Fatal("LPUSH on a string succeeded")
	}
	if err := redis.NewScript("return 1").Run(ctx, rdb, nil).Err(); err != nil { // NOSCRIPT, then EVAL
		t.Fatal(err)
	}
	pipe := rdb.Pipeline()
	pipe.Incr(ctx, "n")
	pipe.Incr(ctx, "n")
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	if err := rdb.Ping(ctx).Err(); err == nil {
		t.Fatal("PING after the server was killed succeeded")
	}
	for _, c := range []struct {
		cmd, kind string
		want      float64
	}{{"lpush", "reply", 1}, {"get", "reply", 0}, {"get", "network", 0}, {"evalsha", "reply", 0}, {"ping", "network", 1}} {
		if got := testutil.ToFloat64(m.RedisErrorsFor(c.cmd, c.kind)); got != c.want {
			t.Errorf("redis errors of %s (%s) = %v, want %v", c.cmd, c.kind, got, c.want)
		}
	}
	if n := testutil.CollectAndCount(m.Registry(), "streamcrawl_redis_roundtrip_seconds"); n < 5 {
		t.Errorf("round-trip histograms for %d commands, want >= 5 (set, get, lpush, evalsha, eval, pipeline, ping)", n)
	}
}

func TestReadyzSaysWhyNotReady(t *testing.T) {
	ready := errors.New("group fetch of sc:{shop}:requests missing")
	srv := httptest.NewServer(metrics.Handler(metrics.New(metrics.Config{}).Registry(), func(context.Context) error { return ready }))
	defer srv.Close()
	get := func(path string) (int, string) {
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b := new(strings.Builder)
		_, _ = io.Copy(b, res.Body)
		return res.StatusCode, b.String()
	}
	if code, body := get("/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "group fetch") {
		t.Errorf("readyz while not ready: %d %q, want 503 with the reason", code, body)
	}
	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Errorf("healthz: %d, want 200", code)
	}
	ready = nil
	if code, _ := get("/readyz"); code != http.StatusOK {
		t.Errorf("readyz when ready: %d, want 200", code)
	}
	if code, body := get("/metrics"); code != http.StatusOK || !strings.Contains(body, "go_memstats_heap_alloc_bytes") {
		t.Errorf("metrics: %d, want 200 with the Go collector's memory figures", code)
	}
}

// TestNamesHaveTheFleetGauges: the fleet collector's gauges are among the names that
// dashboards, alerts and scalers are checked against.
func TestNamesHaveTheFleetGauges(t *testing.T) {
	names := metrics.Names()
	for _, want := range []string{"streamcrawl_crawl_state", "streamcrawl_fleet_ready_requests", "streamcrawl_ready_work"} {
		if !slices.Contains(names, want) {
			t.Errorf("metrics.Names() has no %s: %v", want, names)
		}
	}
}
