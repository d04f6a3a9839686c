package handlers

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// groupDone is "done" for a consumer group of its own on the crawl's streams (an
// archiver, a post-processor): the crawl is done (inspect.Progress.Done, the one done
// check of the crawl's stages) and the group has handled every entry of its streams
// (groupCaughtUp).
func groupDone(ctx context.Context, rdb redis.UniversalClient, l streams.Layout, group string, streamsIn []string) (bool, error) {
	p, err := inspect.ReadProgress(ctx, rdb, l)
	if err != nil || !p.Done() {
		return false, err
	}
	return groupCaughtUp(ctx, rdb, group, streamsIn, nil)
}

// groupCaughtUp reports whether group exists on every stream of streamsIn, holds
// nothing pending there, and has nothing unread: no entry after its last-delivered one,
// or, for a stream upTo names, none up to upTo[stream] (a replay's last entry).
func groupCaughtUp(ctx context.Context, rdb redis.UniversalClient, group string, streamsIn []string, upTo map[string]string) (bool, error) {
	for _, stream := range streamsIn {
		st, err := inspect.ReadGroupState(ctx, rdb, stream, group)
		if err != nil {
			return false, err
		}
		if !st.Exists || st.Pending > 0 {
			return false, nil
		}
		if last, ok := upTo[stream]; st.Unread && !(ok && inspect.CompareIDs(st.LastDelivered, last) >= 0) {
			return false, nil
		}
	}
	return true, nil
}
