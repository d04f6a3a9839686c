package handlers

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
)

// Seed queues requests for urls (the spider's start URLs when urls is empty) through the
// frontier, so URLs already seen are not queued again, and marks the crawl seeded. It
// returns how many were queued.
func Seed(ctx context.Context, rdb redis.UniversalClient, spider *spiders.Spider, urls []string) (_ int, err error) {
	reqs, err := spider.StartRequests()
	if err != nil {
		return 0, err
	}
	if len(urls) > 0 {
		reqs = reqs[:0]
		for _, u := range urls {
			r, err := spiders.NewRequest(u, spiders.DefaultCallback)
			if err != nil {
				return 0, fmt.Errorf("handlers: seed: %w", err)
			}
			reqs = append(reqs, r)
		}
	}
	scope, err := spider.Scope()
	if err != nil {
		return 0, err
	}
	cands := make([]frontier.Candidate, 0, len(reqs))
	for _, r := range reqs {
		if ok, reason := scope.Allows(r); !ok {
			return 0, fmt.Errorf("handlers: seed %s: out of the spider's scope (%s)", r.URL, reason)
		}
		c, err := candidate(spider, r)
		if err != nil {
			return 0, fmt.Errorf("handlers: seed: %w", err)
		}
		cands = append(cands, c)
	}
	f, err := newFrontier(ctx, rdb, spider, frontierUse{seeding: true}, nil)
	if err != nil {
		return 0, err
	}
	defer func() {
		if cerr := f.Close(context.WithoutCancel(ctx)); cerr != nil && err == nil {
			err = cerr // the emit below waited for its writes: nothing should be left to send
		}
	}()
	e, err := f.Emit(ctx, 0, cands, nil)
	if err != nil {
		return 0, err
	}
	n := e.Requests
	if err := rdb.HIncrBy(ctx, streams.NewKeys(spider.Name).Stats, "requests_queued", int64(n)).Err(); err != nil {
		return n, fmt.Errorf("handlers: seed: %w", err)
	}
	if err := f.MarkSeeded(ctx); err != nil {
		return n, err
	}
	return n, nil
}
