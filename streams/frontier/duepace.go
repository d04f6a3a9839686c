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

// due returns the partitions whose set may hold an entry due now: among those to be
// looked at this round (all when paced is false), those whose earliest entry comes due
// within lead. at turns an entry's score into the local time it comes due. Each set is
// read in one pipeline (its earliest entry, reading key of each); a failed read counts
// as due. A partition found empty is looked at again after dueSweep, one whose earliest
// entry is later lead before it, at the latest after dueSweep.
func (p *duePace) due(ctx context.Context, rdb redis.UniversalClient, l streams.Layout, now time.Time, paced bool,
	key func(streams.Keys) string, at func(score float64) time.Time, lead time.Duration) []int {
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
	var due []int
	for i, part := range parts {
		zs, err := cmds[i].Result()
		switch {
		case err != nil:
			due = append(due, part)
		case len(zs) == 0:
			p.after(part, now, time.Time{})
		default:
			if when := at(zs[0].Score); when.After(now.Add(lead)) {
				p.after(part, now, when.Add(-lead))
			} else {
				due = append(due, part)
			}
		}
	}
	return due
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
