package frontier

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
)

// dueSweep is the longest a fetch process leaves a partition's delayed retries or
// revisit schedule unlooked-at (Run's rounds): the fallback that finds what another
// process scheduled there (its own process looks there at once, see duePace.wakePart)
// or left when it died.
const dueSweep = 2 * time.Second

// duePace paces Run's looks at one sorted set per partition whose members come due on
// the Redis clock (the delayed retries, the revisit schedule), so that a crawl with
// nothing due there soon costs Redis no command per partition every RetryInterval.
// A look reads the set's earliest entry (ZRANGE 0 0 WITHSCORES); the partition is
// looked at again a RetryInterval before that entry is due, and at the latest after
// dueSweep, or at the next round when this process scheduled something there (wake).
// The look is only a hint, as the count it replaces was: the script that moves due
// members decides, on the Redis clock.
type duePace struct {
	mu   sync.Mutex
	next []time.Time   // per partition: not looked at before this (local clock); under mu
	wake []atomic.Bool // per partition: look at it in the next round
}

func newDuePace(parts int) *duePace {
	return &duePace{next: make([]time.Time, parts), wake: make([]atomic.Bool, parts)}
}

// wakePart makes the next round look at partition part.
func (p *duePace) wakePart(part int) { p.wake[part].Store(true) }

// wakeAll makes the next round look at every partition.
func (p *duePace) wakeAll() {
	for i := range p.wake {
		p.wake[i].Store(true)
	}
}

// look returns, for each partition due to be looked at now (all when paced is false),
// its set's earliest entry as a score (ok false when the set is empty), reading key
// of each in one pipeline. A failed read counts as an entry due at once (score -inf).
func (p *duePace) look(ctx context.Context, rdb redis.UniversalClient, l streams.Layout, now time.Time, paced bool,
	key func(streams.Keys) string) map[int]dueLook {
	p.mu.Lock()
	var parts []int
	for part := range p.next {
		if p.wake[part].Swap(false) || !paced || !now.Before(p.next[part]) {
			parts = append(parts, part)
		}
	}
	p.mu.Unlock()
	if len(parts) == 0 {
		return nil
	}
	cmds := make([]*redis.ZSliceCmd, len(parts))
	_, _ = rdb.Pipelined(ctx, func(pl redis.Pipeliner) error { // errors are read per command
		for i, part := range parts {
			cmds[i] = pl.ZRangeWithScores(ctx, key(l.Parts[part]), 0, 0)
		}
		return nil
	})
	out := make(map[int]dueLook, len(parts))
	for i, part := range parts {
		zs, err := cmds[i].Result()
		switch {
		case err != nil:
			out[part] = dueLook{ok: true, score: -1 << 62}
		case len(zs) > 0:
			out[part] = dueLook{ok: true, score: zs[0].Score}
		default:
			out[part] = dueLook{}
		}
	}
	return out
}

// dueLook is a partition's earliest entry, as look read it.
type dueLook struct {
	ok    bool    // the set holds an entry
	score float64 // the earliest entry's score
}

// after records when to look at partition part again: at (the local time a RetryInterval
// before its earliest entry is due; zero when none is known), at the latest after
// dueSweep from now.
func (p *duePace) after(part int, now, at time.Time) {
	next := now.Add(dueSweep)
	if !at.IsZero() && at.Before(next) {
		next = at
	}
	p.mu.Lock()
	p.next[part] = next
	p.mu.Unlock()
}
