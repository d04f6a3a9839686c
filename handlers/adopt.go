package handlers

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
)

// adoptScript records a new owner of a crawl that has one.
//
// KEYS[1] -> the crawl's meta hash
// ARGV[1] -> the owner field
// ARGV[2] -> the new owner's fingerprint
// Output: 1 when the owner changed, 0 when the crawl had none or had this one.
var adoptScript = redis.NewScript(`
local have = redis.call('HGET', KEYS[1], ARGV[1])
if not have or have == ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
`)

// Adopt makes sp the spider of its crawl when another spider of the same name started
// it, so that runs of sp are not refused with ErrOtherSpider: a fleet's registry holds
// one spider per crawl, and a new version submitted there replaces the old one on the
// crawl's keys (pages already fetched are not fetched again for the change). A crawl
// not started yet is left as it is (its first run claims it). It reports whether the
// owner changed.
func Adopt(ctx context.Context, rdb redis.UniversalClient, sp *spiders.Spider) (bool, error) {
	l, err := streams.ReadLayout(ctx, rdb, sp.Name)
	if err != nil {
		return false, err
	}
	n, err := adoptScript.Run(ctx, rdb, []string{l.Global.Meta}, ownerField, sp.Fingerprint()).Int()
	if err != nil {
		return false, fmt.Errorf("handlers: adopt crawl %s: %w", sp.Name, err)
	}
	return n == 1, nil
}
