package frontier_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// BenchmarkReleaseRevisits schedules b.N revisits of URLs on 200 hosts spread over an
// hour of minute buckets (each with its chain mark), then releases them all into their
// hosts' queues an hour later with ReleaseRevisits, timing the release only. Reported
// per released URL: redis-µs (the server's CPU), cmds (commands it ran, those run from
// Lua included), and B/scheduled: the schedule's memory per URL beyond the encoded
// request (buckets, bucket set, chain marks), read before the release.
func BenchmarkReleaseRevisits(b *testing.B) {
	rdb := streamstest.Start(b).Client()
	ctx := context.Background()
	layout := streams.NewLayout("rvbench", 1)
	k := layout.Parts[0]
	if err := rdb.XGroupCreateMkStream(ctx, k.Requests, streams.StageFetch, "$").Err(); err != nil {
		b.Fatal(err)
	}
	f, err := frontier.New(frontier.Config{Client: rdb, Layout: layout, SeenCache: -1, RevisitURLs: int64(b.N)})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close(context.Background())
	payloadBytes := 0
	for i := range b.N {
		host := fmt.Sprintf("h%d.example", i%200)
		u := fmt.Sprintf("http://%s/article/%d", host, i)
		p := fmt.Sprintf(`{"url":%q,"meta":{"_revisit":"3600000:a1b2c3d4e5f60718:%x"}}`, u, i%frontier.MaxRevisitGen+1)
		payloadBytes += len(p)
		fp := sha256.Sum256([]byte(u))
		chain := frontier.RevisitChain{URL: fp[:], Gen: uint32(i%frontier.MaxRevisitGen + 1)}
		if _, err := f.ScheduleRevisit(ctx, host, 0, 0, []byte(p), time.Duration(i%60)*time.Minute, chain); err != nil {
			b.Fatal(err)
		}
	}
	var mem int64
	for _, key := range rdb.Keys(ctx, "sc:{rvbench}:rv*").Val() {
		mem += rdb.MemoryUsage(ctx, key, 0).Val()
	}
	f.SetRevisitShift(61 * time.Minute)
	cpu0, cmds0 := redisCost(b, rdb)
	b.ResetTimer()
	if err := f.ReleaseRevisits(ctx); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	reportRedis(b, rdb, cpu0, cmds0)
	b.ReportMetric(float64(mem-int64(payloadBytes))/float64(b.N), "B/scheduled")
	if rv, _ := rdb.HGet(ctx, k.Counts, "revisits").Int(); rv != 0 {
		b.Fatalf("%d revisits left after the release, want 0", rv)
	}
	if w, _ := rdb.HGet(ctx, k.Counts, "waiting").Int(); w != b.N {
		b.Fatalf("%d requests waiting after the release, want %d", w, b.N)
	}
}
