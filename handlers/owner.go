package handlers

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
)

// ErrOtherSpider is matched (errors.Is) by the error of a spider run on a crawl that
// another spider of the same name started.
var ErrOtherSpider = errors.New("handlers: the crawl belongs to another spider")

// ownerField is the field of the crawl's meta hash that holds its spider's
// fingerprint.
const ownerField = "spider_fingerprint"

// claimCrawl records sp as the owner of its crawl (spiders.Spider.Fingerprint in the
// crawl's meta hash) when the crawl has none yet, and returns an error matching
// ErrOtherSpider when another spider owns it: items of two spiders would be mixed in one
// crawl, each taking the other's pages for its own. Every stage, the seeder and Crawl
// claim the crawl before they touch it.
func claimCrawl(ctx context.Context, rdb redis.UniversalClient, l streams.Layout, sp *spiders.Spider) error {
	fp := sp.Fingerprint()
	meta := l.Global.Meta
	set, err := rdb.HSetNX(ctx, meta, ownerField, fp).Result()
	if err != nil {
		return fmt.Errorf("handlers: record the spider of crawl %s: %w", l.Crawl, err)
	}
	if set {
		return nil
	}
	have, err := rdb.HGet(ctx, meta, ownerField).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("handlers: read the spider of crawl %s: %w", l.Crawl, err)
	}
	if have == fp || have == "" {
		return nil
	}
	return fmt.Errorf("%w: crawl %s was started by a spider of that name with other start URLs, rules or settings "+
		"(fingerprint %s; this one %s); to start the crawl over with this spider, run crawl --fresh or "+
		"`streamcrawl reset --crawl %s` once none of its services runs, or give this spider another name",
		ErrOtherSpider, l.Crawl, have, fp, l.Crawl)
}
