package metrics

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// Frontier is what the crawl collector shows of a crawl's frontier.
type Frontier struct {
	// Requests waiting to be dispatched into the requests stream.
	Requests int64
	// Delayed requests waiting for a retry or politeness time.
	Delayed int64
	// DueHosts is the number of hosts that may start a request now; -1 when the
	// frontier cannot tell (see ReadFrontier).
	DueHosts int64
}

// ReadFrontier reads a crawl's frontier figures. Every read of frontier keys by this
// package goes through here, so that a new frontier layout needs only this function
// changed.
func ReadFrontier(ctx context.Context, rdb redis.UniversalClient, l streams.Layout) (Frontier, error) {
	p, err := inspect.ReadProgress(ctx, rdb, l)
	if err != nil {
		return Frontier{}, err
	}
	due, err := inspect.DueHosts(ctx, rdb, l, time.Now())
	if err != nil {
		return Frontier{}, err
	}
	return Frontier{Requests: p.Frontier, Delayed: p.Delayed, DueHosts: due}, nil
}
