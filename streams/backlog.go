package streams

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"
	"github.com/streamcrawl/streamcrawl/streams/loop"
)

// defaultBacklogInterval is how often a Backlog looks at its group.
const defaultBacklogInterval = 100 * time.Millisecond

// Backlog watches how many entries a group has not finished (unread plus pending) and
// tells whether it is under a bound; a Subscriber's Gate uses it so that fetchers slow
// down when the parse stage falls behind, which bounds the responses stream's memory.
type Backlog struct {
	// Client is the Redis client; Run does not close it.
	Client redis.UniversalClient
	// Streams are the streams the group reads (one per partition); the backlog is their
	// sum.
	Streams []string
	// Group is the consumer group watched.
	Group string
	// Max is the bound (> 0): Under reports whether the backlog is below it.
	Max int64
	// Interval is how often Run looks. Default 100ms.
	Interval time.Duration
	// CountUnread counts unread entries with XRANGE instead of trusting XINFO's lag;
	// set it for the embedded Redis, whose lag is the whole stream's length (acked
	// entries kept for retention included).
	CountUnread bool

	over atomic.Bool  // the backlog was at or over Max at the last look
	size atomic.Int64 // the backlog at the last look
}

// Under reports whether the backlog was under its bound at the last look (true before
// the first).
func (b *Backlog) Under() bool { return !b.over.Load() }

// Run looks at once and then every Interval until ctx ends, then returns nil. When it
// cannot look, it keeps the last answer.
func (b *Backlog) Run(ctx context.Context) error {
	interval := b.Interval
	if interval <= 0 {
		interval = defaultBacklogInterval
	}
	return loop.Every(ctx, interval, loop.Config{Now: true}, func(ctx context.Context) error {
		if n, ok := b.look(ctx); ok {
			b.size.Store(n)
			b.over.Store(n >= b.Max)
		}
		return nil
	})
}

// backlogScript counts what a group has not finished on one stream: its pending
// entries plus its unread ones (those counted at most up to the bound).
//
// KEYS[1] -> stream
// ARGV[1] -> group, ARGV[2] -> the most unread entries worth counting, ARGV[3] -> 'lag'
// or 'range' (see rkit.LuaUnread)
// Output: pending + unread; 0 when the stream or the group does not exist
var backlogScript = redis.NewScript(rkit.LuaUnread + `
for _, f in ipairs(groups_of(KEYS[1]) or {}) do
  if f['name'] == ARGV[1] then
    return tonumber(f['pending']) + unread_of(KEYS[1], f, tonumber(ARGV[2]), ARGV[3])
  end
end
return 0
`)

// look sums the group's unread and pending entries over the streams; false when it
// cannot tell.
func (b *Backlog) look(ctx context.Context) (int64, bool) {
	var n int64
	mode := rkit.UnreadMode(b.CountUnread)
	for _, stream := range b.Streams {
		m, err := rkit.RunRO(ctx, b.Client, backlogScript, []string{stream}, b.Group, b.Max, mode).Int64()
		if err != nil {
			return 0, false
		}
		n += m
	}
	return n, true
}
