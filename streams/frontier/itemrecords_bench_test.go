package frontier_test

import (
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"testing"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// BenchmarkItemKeyBytes reports the Redis memory (MEMORY USAGE, summed over the keys)
// per item key of 100,000 items of five fields: in the plain key set (items not
// versioned) and as versioned records in 1,024 buckets, in the buckets sized for
// 100,000 (capacity/64) and in those of the default capacity (10M/64). Run with
// -benchtime=1x: the figure is of the state, not of the loop.
func BenchmarkItemKeyBytes(b *testing.B) {
	n := benchItemKeys
	for _, c := range []struct {
		name    string
		buckets uint32 // 0: not versioned
	}{{"set", 0}, {"records-1024", 1024}, {"records-1563", 100_000 / 64}, {"records-156250", 10_000_000 / 64}} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				rdb := streamstest.Start(b).Client()
				ctx := context.Background()
				k := streams.NewKeys("bytes")
				f, err := frontier.New(frontier.Config{Client: rdb, Layout: streams.NewLayout(k.Crawl, 1), ItemRecordBuckets: c.buckets, Linger: -1})
				if err != nil {
					b.Fatal(err)
				}
				for i := 0; i < n; i += 500 {
					items := make([]frontier.ItemOut, 0, 500)
					for j := i; j < i+500; j++ {
						url := fmt.Sprintf("http://shop/p/%d", j)
						sum := sha256.Sum256([]byte(url))
						out := frontier.ItemOut{Key: sum[:16], Payload: []byte("x")}
						if c.buckets > 0 {
							it := spiders.NewItem("product", map[string]any{"url": url, "name": "tea", "price": j, "stock": 3, "sale": false})
							rec, err := spiders.NewItemRecord(&it, 1)
							if err != nil {
								b.Fatal(err)
							}
							out.Record = rec.Bytes()
						}
						items = append(items, out)
					}
					if _, err := f.Emit(ctx, 0, nil, items); err != nil {
						b.Fatal(err)
					}
				}
				f.Close(context.Background())
				var total int64
				keys := []string{k.ItemKeys}
				if c.buckets > 0 {
					keys = rdb.Keys(ctx, k.Crawl+"*itemrec:*").Val()
					if len(keys) == 0 {
						keys = rdb.Keys(ctx, "*itemrec:*").Val()
					}
				}
				for _, key := range keys {
					total += rdb.MemoryUsage(ctx, key, 0).Val()
				}
				b.ReportMetric(float64(total)/float64(n), "B/key")
				b.ReportMetric(float64(len(keys)), "hashes")
			}
		})
	}
}

// benchItemKeys is how many item keys BenchmarkItemKeyBytes stores.
// (-itemkeys to change it).
var benchItemKeys = 100_000

func init() {
	flag.IntVar(&benchItemKeys, "itemkeys", benchItemKeys, "item keys BenchmarkItemKeyBytes stores")
}
