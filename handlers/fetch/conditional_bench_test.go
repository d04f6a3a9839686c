package fetch

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// benchRevisited is how many revisited URLs BenchmarkValidatorBytes keeps validators of.
const benchRevisited = 10_000

// BenchmarkValidatorBytes measures what the validators of benchRevisited URLs cost in
// Redis: bytes per URL (MEMORY USAGE of every validators hash), and commands per visit
// of a URL (INFO commandstats), over a first visit (a 200 whose ETag and Last-Modified
// are saved) and a revisit (asked with them, answered 304), as the fetcher sends them
// (a script is one command; a pipeline one round trip). The buckets are sized by
// settings.capacity: full when it is the number of revisited URLs, sparse when the crawl
// plans for many more pages than it revisits (10,000,000 is the default).
func BenchmarkValidatorBytes(b *testing.B) {
	n := benchRevisited
	for _, c := range []struct {
		name     string
		capacity int64
		forget   time.Duration
	}{{"capacity-10000", 10_000, 0}, {"capacity-100000", 100_000, 0}, {"capacity-10000000", 10_000_000, 0},
		{"forget_after-capacity-10000", 10_000, time.Hour}} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				rdb := streamstest.Start(b).Client()
				ctx := context.Background()
				v := newValidators(rdb, streams.NewLayout("bytes", 1), spiders.Settings{Capacity: c.capacity,
					Revisit: spiders.RevisitSettings{ForgetAfter: c.forget, Rules: []spiders.RevisitRule{{Min: time.Minute, Max: time.Hour}}}})
				var sent sentCounter
				rdb.AddHook(&sent)
				for i := range n {
					u := fmt.Sprintf("http://shop.example/p/%d", i)
					cond := benchVisit(ctx, b, v, u)
					h := http.Header{"Etag": {fmt.Sprintf(`"v1-%d"`, i)}, "Last-Modified": {time.Unix(1_700_000_000, 0).UTC().Format(http.TimeFormat)}}
					if err := v.save(ctx, cond, h); err != nil {
						b.Fatal(err)
					}
					if err := v.notModified(ctx, benchVisit(ctx, b, v, u)); err != nil {
						b.Fatal(err)
					}
				}
				cmds, trips := sent.cmds, sent.trips
				var total int64
				keys := rdb.Keys(ctx, "*validators:*").Val()
				for _, key := range keys {
					total += rdb.MemoryUsage(ctx, key, 0).Val()
				}
				b.ReportMetric(float64(total)/float64(n), "B/URL")
				b.ReportMetric(float64(len(keys)), "hashes")
				b.ReportMetric(float64(cmds)/float64(2*n), "cmds/visit")
				b.ReportMetric(float64(trips)/float64(2*n), "trips/visit")
			}
		})
	}
}

// benchVisit builds the request for u as the fetcher does and returns its conditional.
func benchVisit(ctx context.Context, b *testing.B, v *validators, u string) *conditional {
	req := &spiders.Request{URL: u}
	hreq, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		b.Fatal(err)
	}
	c, err := v.apply(ctx, req, hreq)
	if err != nil || c == nil {
		b.Fatalf("apply %s: %v", u, err)
	}
	return c
}

// sentCounter counts the commands a client sends and its round trips (a pipeline is
// one trip, a script one command).
type sentCounter struct{ cmds, trips int64 }

func (c *sentCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *sentCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.cmds++
		c.trips++
		return next(ctx, cmd)
	}
}

func (c *sentCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.cmds += int64(len(cmds))
		c.trips++
		return next(ctx, cmds)
	}
}
