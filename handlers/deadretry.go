package handlers

import (
	"context"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/handlers/fetch"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// RetryDead puts dead letters of the crawl back on the streams they came from
// (inspect.RetryDead: the entries with the given IDs, or all of them when ids is
// empty); a request gets its fetch retries afresh, and a request dropped because its
// host's robots.txt was unreachable gets that robots.txt asked again (its stored
// verdict is deleted). It returns how many were re-queued;
// an ID found nowhere is an error (after the others are re-queued). `streamcrawl dead
// retry` and the dashboard's retry button both call it.
func RetryDead(ctx context.Context, rdb redis.UniversalClient, l streams.Layout, ids []string) (int, error) {
	return inspect.RetryDead(ctx, rdb, l, ids, func(k streams.Keys, d inspect.DeadLetter) ([]byte, error) {
		if d.Stream != k.Requests {
			return nil, nil
		}
		// A request that ran out of retries gets them all again.
		r, err := spiders.UnmarshalRequest([]byte(d.Fields["payload"]))
		if err != nil {
			return nil, nil // put back as it was
		}
		r.Retries, r.LastError = 0, ""
		if strings.Contains(d.Error, fetch.DropRobotsUnreachable+":") {
			if err := fetch.ForgetRobots(ctx, rdb, l, r.URL); err != nil {
				return nil, err
			}
		}
		return spiders.MarshalRequest(r)
	})
}
