package streams

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"
)

// Fields of a crawl's meta hash: its epoch (see Layout.Epoch), and the first failover
// seen during the crawl while its writes were not waiting for replicas.
const (
	metaEpoch    = "epoch"
	metaFailover = "failover_async"
)

// ErrStateLost wraps the error of a process whose crawl's state is gone from Redis: the
// epoch it read when it started is missing (Redis was emptied: FLUSHALL, a restart
// without persistence, a new primary without the data, a reset) or another one (the
// crawl was deleted and created again). Its stages stop: what it would write belongs to
// no crawl any more, and the crawl can never be done.
var ErrStateLost = errors.New("crawl state lost in Redis")

// newEpoch returns a random epoch: 16 hex digits.
func newEpoch() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// checkEpoch returns an error wrapping ErrStateLost when the crawl's stored epoch is not
// l.Epoch, the one the process read when it opened the crawl (one HGET). A layout
// without an epoch checks nothing; an error reading it is returned as it is (Redis
// unreachable: nothing is known).
func checkEpoch(ctx context.Context, rdb redis.UniversalClient, l Layout) error {
	if l.Epoch == "" {
		return nil
	}
	got, err := rdb.HGet(ctx, l.Global.Meta, metaEpoch).Result()
	switch {
	case rkit.ErrNil(err):
		return fmt.Errorf("%w: crawl %s has no epoch in Redis any more (this process started with %s): its keys "+
			"were deleted (FLUSHALL, reset) or Redis came back without them (a restart without persistence, a "+
			"primary without the data)", ErrStateLost, l.Crawl, l.Epoch)
	case err != nil:
		return fmt.Errorf("streams: read the epoch of crawl %s: %w", l.Crawl, err)
	case got != l.Epoch:
		return fmt.Errorf("%w: crawl %s has epoch %s in Redis, this process started with %s: the crawl was "+
			"deleted and created again", ErrStateLost, l.Crawl, got, l.Epoch)
	}
	return nil
}

// RecordFailover records in the crawl's meta hash that what (a failover, described)
// happened while the crawl's writes did not wait for replicas: writes the old primary
// had acknowledged and not yet passed on are lost, and the crawl may be missing pages.
// The first record stays; ReadFailover returns it.
func RecordFailover(ctx context.Context, rdb redis.UniversalClient, l Layout, what string) error {
	v := time.Now().UTC().Format(time.RFC3339) + " " + what
	if err := rdb.HSetNX(ctx, l.Global.Meta, metaFailover, v).Err(); err != nil {
		return fmt.Errorf("streams: record a failover of crawl %s: %w", l.Crawl, err)
	}
	return nil
}

// ReadFailover returns the failover RecordFailover recorded for the crawl (its time,
// then what it was), "" when there was none.
func ReadFailover(ctx context.Context, rdb redis.UniversalClient, l Layout) (string, error) {
	v, err := rdb.HGet(ctx, l.Global.Meta, metaFailover).Result()
	if err != nil && !rkit.ErrNil(err) {
		return "", fmt.Errorf("streams: read the failovers of crawl %s: %w", l.Crawl, err)
	}
	return v, nil
}
