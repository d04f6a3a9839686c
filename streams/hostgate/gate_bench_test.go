package hostgate_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams/hostgate"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// BenchmarkAcquireRelease measures one granted ask and its release at a host (100
// hosts in turn) as Redis sees them (INFO commandstats): commands run, scripts
// included, and the µs Redis spent, for a host with a limit and no delay, and one with
// a delay too (whose release sets the next start).
func BenchmarkAcquireRelease(b *testing.B) {
	for _, c := range []struct {
		name string
		rule hostgate.Rule
	}{{"limit", hostgate.Rule{Concurrency: 2}}, {"limit-and-delay", hostgate.Rule{Concurrency: 1, Delay: time.Millisecond}}} {
		b.Run(c.name, func(b *testing.B) {
			rdb := streamstest.Start(b).Client()
			g, err := hostgate.New(rdb, hostgate.Config{})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			hosts := make([]string, 100)
			for i := range hosts {
				hosts[i] = "h" + strconv.Itoa(i) + ".example"
			}
			before := serverStats(ctx, b, rdb)
			b.ResetTimer()
			for i := range b.N {
				host := hosts[i%len(hosts)]
				if _, err := g.Acquire(ctx, host, c.rule, "t", time.Minute); err != nil {
					b.Fatal(err)
				}
				if err := g.Release(ctx, host, "t", 0); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			after := serverStats(ctx, b, rdb)
			b.ReportMetric((after[0]-before[0])/float64(b.N), "cmds/pair")
			b.ReportMetric((after[1]-before[1])/float64(b.N), "redis-µs/pair")
		})
	}
}

// serverStats returns the calls and µs of every command but INFO so far.
func serverStats(ctx context.Context, b *testing.B, rdb *redis.Client) [2]float64 {
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	var out [2]float64
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") || name == "cmdstat_info" {
			continue
		}
		for _, kv := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			n, _ := strconv.ParseFloat(v, 64)
			switch k {
			case "calls":
				out[0] += n
			case "usec":
				out[1] += n
			}
		}
	}
	return out
}
