package streams

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"sort"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

var variants = map[string]func() string{}

func TestZZProf(t *testing.T) {
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	n := 200000
	fps := make([][]byte, n)
	for i := range fps {
		s := sha256.Sum256([]byte(strconv.Itoa(i)))
		fps[i] = s[:16]
	}
	names := []string{}
	for k := range variants {
		if os.Getenv("V") == "" || os.Getenv("V") == k {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	res := map[string][]float64{}
	for rep := 0; rep < 3; rep++ {
		for _, name := range names {
			rdb.FlushAll(ctx)
			s := redis.NewScript(variants[name]())
			c0 := srv.UsedCPU()
			for i := 0; i < n; i += 1000 {
				args := make([]any, 1000)
				for j := range args {
					args[j] = fps[i+j]
				}
				if err := s.Run(ctx, rdb, []string{"sc:{b}:seen"}, args...).Err(); err != nil {
					t.Fatal(name, err)
				}
			}
			res[name] = append(res[name], (srv.UsedCPU()-c0)/float64(n)*1e6)
			if rep == 0 {
				var tot int64
				_ = scanKeys(ctx, rdb, "sc:*", func(ks []string) error {
					for _, k := range ks {
						tot += rdb.MemoryUsage(ctx, k, 0).Val()
					}
					return nil
				})
				fmt.Printf("%-12s %.2f bytes/url\n", name, float64(tot)/float64(n))
			}
		}
	}
	for _, name := range names {
		sort.Float64s(res[name])
		fmt.Printf("%-12s min %.2f med %.2f us/url\n", name, res[name][0], res[name][1])
	}
}
