package dedup_test

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/dedup"
)

// The Deduper of a crawl: Add from Go, or the same logic spliced into a script that
// also enqueues (as the frontier's emit script does). It runs here on the embedded
// Redis; streams.Connect with a URL gives a real one.
func ExampleDeduper() {
	ctx := context.Background()
	rdb, err := streams.Connect(ctx, streams.ClientOptions{}) // embedded
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rdb.Close()
	keys := streams.NewKeys("shop")
	d, err := dedup.Open(ctx, rdb, streams.NewLayout(keys.Crawl, 1), dedup.Config{Mode: dedup.Exact}, nil) // bloom needs a real Redis (BITFIELD_RO)
	if err != nil {
		fmt.Println(err)
		return
	}
	isNew, err := d.Add(ctx, [][]byte{[]byte("0123456789abcdef"), []byte("0123456789abcdef")})
	fmt.Println(isNew, err)

	// KEYS[1] -> sc:{shop}:seen, KEYS[2] -> sc:{shop}:requests
	// ARGV -> fingerprint, payload, fingerprint, payload, ...
	enqueue := redis.NewScript(d.Lua() + `
local fps = {}
for i = 1, #ARGV, 2 do fps[#fps + 1] = ARGV[i] end
local isNew, n = seen_add_all(KEYS[1], fps), 0
for j = 1, #fps do
  if isNew[j] == 1 then
    redis.call('XADD', KEYS[2], '*', 'payload', ARGV[2 * j])
    n = n + 1
  end
end
return n
`)
	n, err := enqueue.Run(ctx, rdb, []string{keys.Seen, keys.Requests}, "fedcba9876543210", `{"url":"https://shop.example/"}`).Int()
	fmt.Println(n, err)
	// Output:
	// [true false] <nil>
	// 1 <nil>
}
