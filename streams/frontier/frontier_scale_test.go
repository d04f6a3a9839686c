package frontier_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/streams/frontier"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// BenchmarkFrontierScale measures the host frontier at 100,000 hosts on a real Redis:
// Redis bytes per waiting host (with its one request) and per waiting request (one
// host's queue), the Redis CPU a dispatched request costs with 100,000 hosts ready, and
// the longest single script call (SLOWLOG) while a page with 100,000 links is queued.
// Run it once: go test -run '^$' -bench FrontierScale -benchtime 1x ./streams/
func BenchmarkFrontierScale(b *testing.B) {
	const n = 100_000
	for range b.N {
		srv := streamstest.Start(b)
		rdb := srv.Client()
		ctx := context.Background()
		hosts := frontier.HostRule{Concurrency: 1, Delay: time.Second}
		payload := func(h, i int) []byte {
			return []byte(fmt.Sprintf(`{"v":1,"url":"http://host%06d.example/p/%d","cb":"parse","depth":1}`, h, i))
		}
		page := func(crawl string, host func(i int) int) (streams.Keys, int64, time.Duration) {
			k := streams.NewKeys(crawl)
			f, err := frontier.New(frontier.Config{Client: rdb, Layout: streams.NewLayout(k.Crawl, 1), SeenCache: -1, Hosts: hosts})
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close(context.Background())
			cands := make([]frontier.Candidate, n)
			for i := range cands {
				h := host(i)
				cands[i] = frontier.Candidate{Fingerprint: []byte(fmt.Sprintf("%s-%d", crawl, i)), Payload: payload(h, i),
					Host: fmt.Sprintf("host%06d.example", h)}
			}
			m0 := streamstest.UsedMemory(b, rdb)
			rdb.ConfigSet(ctx, "slowlog-max-len", "1000000")
			rdb.ConfigSet(ctx, "slowlog-log-slower-than", "0")
			rdb.SlowLogReset(ctx)
			if q, err := enqueue(ctx, f, cands); err != nil || q != n {
				b.Fatalf("queued %d, %v", q, err)
			}
			longest := longestCall(b, rdb)
			rdb.ConfigSet(ctx, "slowlog-log-slower-than", "10000")
			rdb.SlowLogReset(ctx)
			b.Logf("%s: one host queue %d B, ready set %d B, used_memory +%d B", crawl,
				rdb.MemoryUsage(ctx, k.HostQueue(fmt.Sprintf("host%06d.example", host(0)), 0), 0).Val(),
				rdb.MemoryUsage(ctx, k.Ready, 0).Val(), streamstest.UsedMemory(b, rdb)-m0)
			// The dedup's set grows with the page too: count it out.
			seen := rdb.MemoryUsage(ctx, k.Seen, 0).Val()
			return k, streamstest.UsedMemory(b, rdb) - m0 - seen, longest
		}
		_, oneHost, longestOne := page("onehost", func(int) int { return 0 })
		k, manyHosts, longestMany := page("manyhosts", func(i int) int { return i })
		if err := rdb.XGroupCreateMkStream(ctx, k.Requests, streams.StageFetch, "$").Err(); err != nil {
			b.Fatal(err)
		}
		d, _ := frontier.New(frontier.Config{Client: rdb, Layout: streams.NewLayout(k.Crawl, 1), Window: 1000, Hosts: hosts})
		cpu0 := srv.UsedCPU()
		rdb.ConfigSet(ctx, "slowlog-log-slower-than", "0")
		rdb.SlowLogReset(ctx)
		moved := 0
		for moved < n {
			m, err := d.Dispatch(ctx)
			if err != nil || m == 0 {
				b.Fatalf("dispatch moved %d, %v after %d", m, err, moved)
			}
			moved += m
			// Every request is read at once (the window is the only bound here).
			if err := rdb.XGroupSetID(ctx, k.Requests, streams.StageFetch, "$").Err(); err != nil {
				b.Fatal(err)
			}
		}
		longestDispatch := longestCall(b, rdb)
		cpu := srv.UsedCPU() - cpu0
		b.ReportMetric(float64(manyHosts)/n, "B/waiting-host")
		b.ReportMetric(float64(oneHost)/n, "B/waiting-request")
		b.ReportMetric(cpu/n*1e6, "redis-µs/dispatched")
		b.ReportMetric(float64(max(longestOne, longestMany).Microseconds())/1000, "ms-longest-emit-call")
		b.ReportMetric(float64(longestDispatch.Microseconds())/1000, "ms-longest-dispatch-call")
	}
}

// longestCall returns the longest command in the slow log (slowlog-log-slower-than 0
// records every one).
func longestCall(b *testing.B, rdb *redis.Client) time.Duration {
	b.Helper()
	logs, err := rdb.SlowLogGet(context.Background(), 100_000).Result()
	if err != nil {
		b.Fatal(err)
	}
	var longest time.Duration
	for _, l := range logs {
		longest = max(longest, l.Duration)
	}
	return longest
}
