package inspect

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"
)

// NoCrawlError is the error of a command given the name of a crawl that Redis does not
// hold: every command that takes a crawl name returns it, naming the crawls that exist.
type NoCrawlError struct {
	// Crawl is the name asked for.
	Crawl string
	// Addr is the Redis address, for the message ("" leaves it out).
	Addr string
	// Crawls are the crawls Redis holds, sorted.
	Crawls []string
}

// Error says which crawl is missing and lists those that exist.
func (e *NoCrawlError) Error() string {
	where := "in Redis"
	if e.Addr != "" {
		where += " at " + e.Addr
	}
	msg := fmt.Sprintf("no crawl %q %s", e.Crawl, where)
	switch len(e.Crawls) {
	case 0:
		msg += " (it holds no crawl: a crawl exists once it is seeded or a stage has run with its spider)"
	default:
		msg += fmt.Sprintf(" (crawls there: %s; check --crawl and --redis)", strings.Join(e.Crawls, ", "))
	}
	return msg
}

// crawlExists reports whether Redis holds the crawl: its meta hash, which seeding or
// any stage writes first (streams.OpenLayout), exists. One EXISTS.
func crawlExists(ctx context.Context, rdb redis.UniversalClient, crawl string) (bool, error) {
	n, err := rdb.Exists(ctx, streams.NewKeys(crawl).Meta).Result()
	if err != nil {
		return false, fmt.Errorf("inspect: look for crawl %s: %w", crawl, err)
	}
	return n == 1, nil
}

// ListCrawls returns the names of the crawls Redis holds, sorted. It scans the key space
// (SCAN MATCH the crawls' meta hashes, on every primary of a cluster): for messages and
// pickers, never a path a crawl runs on.
func ListCrawls(ctx context.Context, rdb redis.UniversalClient) ([]string, error) {
	var crawls []string
	err := rkit.ScanKeys(ctx, rdb, streams.MetaPattern, func(keys []string) error {
		for _, k := range keys {
			if c, ok := streams.CrawlOfMeta(k); ok && !slices.Contains(crawls, c) {
				crawls = append(crawls, c)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("inspect: list crawls: %w", err)
	}
	slices.Sort(crawls)
	return crawls, nil
}

// RequireCrawl returns a *NoCrawlError, listing the crawls that exist, when Redis does
// not hold the crawl; addr names the server in the message. It writes nothing: a
// command that only reads or repairs a crawl calls it first, so that a mistyped name
// creates no key.
func RequireCrawl(ctx context.Context, rdb redis.UniversalClient, crawl, addr string) error {
	ok, err := crawlExists(ctx, rdb, crawl)
	if err != nil || ok {
		return err
	}
	crawls, err := ListCrawls(ctx, rdb)
	if err != nil {
		return err
	}
	return &NoCrawlError{Crawl: crawl, Addr: addr, Crawls: crawls}
}
