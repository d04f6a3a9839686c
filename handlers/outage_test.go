package handlers_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// bulkySite serves /0 ... /n-1 like chainSite (page i links to 2i+1 and 2i+2), each page
// padded with size bytes that do not compress, and counts requests per path.
type bulkySite struct {
	n, size int
	mu      sync.Mutex
	hits    map[string]int
}

func (s *bulkySite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.hits[r.URL.Path]++
	s.mu.Unlock()
	i, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/"))
	if err != nil || i < 0 || i >= s.n {
		http.NotFound(w, r)
		return
	}
	pad := make([]byte, s.size*3/4)
	rng := rand.New(rand.NewPCG(uint64(i), 7))
	for j := range pad {
		pad[j] = byte(rng.Uint32())
	}
	w.Header().Set("Content-Type", "text/html")
	fmt.Fprintf(w, "<html><body><h1>page %d</h1>", i)
	for _, j := range []int{2*i + 1, 2*i + 2} {
		if j < s.n {
			fmt.Fprintf(w, "<a href=\"/%d\">next</a>", j)
		}
	}
	fmt.Fprintf(w, "<p>%s</p></body></html>", base64.StdEncoding.EncodeToString(pad))
}

func (s *bulkySite) counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.hits))
	for k, v := range s.hits {
		out[k] = v
	}
	return out
}

// A full Redis (maxmemory with noeviction) is an outage: the crawl stalls with one clear
// log line, fetches no page again, writes no dead letter and is not reported done; once
// maxmemory is raised it completes by itself with every item.
func TestFullRedisStallsThenResumesWithoutLoss(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t, "--maxmemory-policy", "noeviction")
	rdb := srv.Client()
	const pages = 80
	site := &bulkySite{n: pages, size: 16 << 10, hits: map[string]int{}}
	base := serve(t, site)
	sp := titleSpider("full", base)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()

	core, logs := observer.New(zapcore.WarnLevel)
	log := zap.New(zapcore.NewTee(zaptest.NewLogger(t).Core(), core))
	if _, err := handlers.Seed(ctx, rdb, sp, nil); err != nil {
		t.Fatal(err)
	}
	// Room for the crawl's state and a few pages, far from the 80 pages' 1.3 MB of
	// retained responses.
	used := usedMemory(ctx, t, rdb)
	if err := rdb.ConfigSet(ctx, "maxmemory", strconv.FormatInt(used+300<<10, 10)).Err(); err != nil {
		t.Fatal(err)
	}
	sink := newMemSink()
	done := make(chan error, 1)
	go func() {
		done <- handlers.Run(ctx, handlers.RunConfig{
			Client: rdb, Spider: sp, UntilDone: true, Options: handlers.Options{Sink: sink, Consumer: "test",
				Stages:     []string{streams.StageFetch, streams.StageParse, streams.StageStore},
				RetryBase:  20 * time.Millisecond,
				Subscriber: streams.SubscriberConfig{BlockTime: testBlockTime, RetryBackoff: 20 * time.Millisecond, MaxDeliveries: 3, ShutdownTimeout: 5 * time.Second},
				Logger:     log,
			}})
	}()

	// The crawl runs into the limit and says so.
	for logs.FilterMessageSnippet("redis refuses writes").Len() == 0 {
		select {
		case err := <-done:
			t.Fatalf("crawl ended (err %v) with %d of %d items and no outage logged", err, len(sink.keys()), pages)
		case <-time.After(20 * time.Millisecond):
		}
	}
	// Stalled for a while (well past MaxDeliveries × RetryBackoff): not done, nothing
	// fetched twice, no dead letters.
	select {
	case err := <-done:
		t.Fatalf("crawl ended while Redis refused writes (err %v): %d of %d items", err, len(sink.keys()), pages)
	case <-time.After(3 * time.Second):
	}
	if n := deadCount(ctx, t, rdb); n != 0 {
		t.Fatalf("%d dead letters while Redis was full, want 0", n)
	}
	stored := len(sink.keys())
	if stored >= pages {
		t.Fatalf("all %d items stored before maxmemory was raised: the test did not fill Redis", stored)
	}
	if got := logs.FilterMessageSnippet("redis refuses writes:").Len(); got != 1 {
		t.Errorf("outage logged %d times, want once", got)
	}

	// Memory freed: the same processes finish the crawl.
	if err := rdb.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatalf("crawl did not finish after maxmemory was raised: %d of %d items", len(sink.keys()), pages)
	}
	wantAllPages(t, sink, base, pages)
	for path, n := range site.counts() {
		if n > 2 {
			t.Errorf("%s fetched %d times, want at most 2", path, n)
		}
	}
	if n := deadCount(ctx, t, rdb); n != 0 {
		t.Errorf("%d dead letters after the outage, want 0", n)
	}
	if logs.FilterMessageSnippet("redis accepts writes again").Len() == 0 {
		t.Errorf("the end of the outage was not logged")
	}
	stats, err := rdb.HGetAll(ctx, streams.NewKeys("full").Stats).Result()
	if err != nil {
		t.Fatal(err)
	}
	if stats["write_outages"] == "" || stats["writes_refused"] == "" {
		t.Errorf("stats %v lack write_outages and writes_refused", stats)
	}
	t.Logf("stalled with %d of %d items stored; counters write_outages=%s writes_refused=%s",
		stored, pages, stats["write_outages"], stats["writes_refused"])
}

func usedMemory(ctx context.Context, t *testing.T, rdb redis.UniversalClient) int64 {
	t.Helper()
	info, err := rdb.Info(ctx, "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	t.Fatalf("no used_memory in INFO memory")
	return 0
}

func deadCount(ctx context.Context, t *testing.T, rdb redis.UniversalClient) int64 {
	t.Helper()
	n, err := rdb.XLen(ctx, streams.NewKeys("full").Dead).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n
}
