package handlers

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// RetryDead puts dead letters of the crawl back on the streams they came from: the
// entries with the given IDs (looked for in every partition's dead-letter stream), or
// all of them when ids is empty. A request gets its fetch retries afresh. It returns how
// many were re-queued; an ID found nowhere is an error (after the others are re-queued).
// `streamcrawl dead retry` and the dashboard's retry button both call it.
func RetryDead(ctx context.Context, rdb redis.UniversalClient, l streams.Layout, ids []string) (int, error) {
	n := 0
	found := map[string]bool{}
	for _, k := range l.Parts {
		var dead []inspect.DeadLetter
		var err error
		if len(ids) > 0 {
			// A dead letter's ID names it within its partition's stream: look in each.
			for _, id := range ids {
				d, err := inspect.GetDead(ctx, rdb, k, []string{id})
				if err == nil {
					dead, found[id] = append(dead, d...), true
				}
			}
		} else if dead, err = inspect.ListDead(ctx, rdb, k, "-", 1<<30); err != nil {
			return n, err
		}
		m, err := requeueDead(ctx, rdb, k, dead)
		n += m
		if err != nil {
			return n, err
		}
	}
	for _, id := range ids {
		if !found[id] {
			return n, fmt.Errorf("handlers: no dead letter %s in crawl %s (re-queued %d)", id, l.Crawl, n)
		}
	}
	return n, nil
}

// requeueDead puts the dead letters of partition k back on their streams.
func requeueDead(ctx context.Context, rdb redis.UniversalClient, k streams.Keys, dead []inspect.DeadLetter) (int, error) {
	n := 0
	for _, d := range dead {
		var payload []byte
		if d.Stream == k.Requests {
			// A request that ran out of retries gets them all again.
			if r, err := spiders.UnmarshalRequest([]byte(d.Fields["payload"])); err == nil {
				r.Retries, r.LastError = 0, ""
				if payload, err = spiders.MarshalRequest(r); err != nil {
					return n, err
				}
			}
		}
		if _, err := inspect.Requeue(ctx, rdb, k, d, payload); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
