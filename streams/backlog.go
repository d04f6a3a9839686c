package streams

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams/loop"
)

// DefaultBacklogInterval is how often a Backlog looks at its group.
const DefaultBacklogInterval = 100 * time.Millisecond

// Backlog watches how many entries a group has not finished (unread plus pending) and
// tells whether it is under a bound; a Subscriber's Gate uses it so that fetchers slow
// down when the parse stage falls behind, which bounds the responses stream's memory.
type Backlog struct {
	// Interval is how often Run looks. NewBacklog sets DefaultBacklogInterval; change
	// it before Run.
	Interval time.Duration

	rdb     redis.UniversalClient
	streams []string
	group   string
	max     int64
	under   atomic.Bool
	size    atomic.Int64
}

// NewBacklog returns a watcher of group on streams (one per partition; the backlog is
// their sum) with bound max (> 0).
func NewBacklog(rdb redis.UniversalClient, streams []string, group string, max int64) *Backlog {
	b := &Backlog{Interval: DefaultBacklogInterval, rdb: rdb, streams: streams, group: group, max: max}
	b.under.Store(true)
	return b
}

// Under reports whether the backlog was under its bound at the last look.
func (b *Backlog) Under() bool { return b.under.Load() }

// Size is the backlog at the last look.
func (b *Backlog) Size() int64 { return b.size.Load() }

// Run looks at once and then every Interval until ctx ends, then returns nil. When it
// cannot look, it keeps the last answer.
func (b *Backlog) Run(ctx context.Context) error {
	return loop.Every(ctx, b.Interval, loop.Config{Now: true}, func(ctx context.Context) error {
		if n, ok := b.look(ctx); ok {
			b.size.Store(n)
			b.under.Store(n < b.max)
		}
		return nil
	})
}

// look sums the group's unread and pending entries over the streams; false when it
// cannot tell.
func (b *Backlog) look(ctx context.Context) (int64, bool) {
	var n int64
	for _, stream := range b.streams {
		groups, err := b.rdb.XInfoGroups(ctx, stream).Result()
		if err != nil {
			return 0, false
		}
		for _, g := range groups {
			if g.Name == b.group {
				n += g.Pending + max(g.Lag, 0)
			}
		}
	}
	return n, true
}
