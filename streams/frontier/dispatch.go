package frontier

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams/loop"
)

// Dispatch: Run hands requests of the hosts that may start one now to the requests
// stream (see hostSchedLua), best band first, keeping the stream's unread backlog at
// most Window; it also makes hosts whose time came ready and takes back the slots of
// dead fetchers. Each round is one Lua script per partition, so a crash inside it
// cannot lose or duplicate a request.

// maxHandOut is the most requests one dispatch call moves (about 30 µs of Redis time
// each with their hosts' bookkeeping), so that no call holds Redis up for long.
const maxHandOut = 256

// dispatchScript runs one dispatch round in a partition: takes back the slots of dead
// fetchers' leases, makes the hosts whose time has come ready, and hands out requests of
// ready hosts until the requests stream has window unread entries (see hostSchedLua).
// Every step is bounded (at most 1,000 leases and hosts looked at, maxHandOut requests
// moved), so one call never holds Redis up for long.
//
// KEYS[1..9], ARGV[1..10] -> schedKeys, schedArgs (see hostSchedLua)
// ARGV[11] -> most requests to move (maxHandOut)
// Output: number of requests moved, then, when no host is left ready, the ms until the
// earliest schedule or lease entry is due (-1: a host is ready, or there is no entry)
var dispatchScript = schedScript("", `
local now = now_ms()
expire_leases(now, 1000)
promote(now, 1000)
local moved = 0
zflush(S.ready)
local ready = redis.call('ZCARD', S.ready)
if ready > 0 then
  local r = room(tonumber(ARGV[11]))
  if r > 0 then moved = hand_out(r, now) end
end
commit()
local wait = -1
if ready == 0 or redis.call('ZCARD', S.ready) == 0 then
  for _, key in ipairs({S.sched, S.leases}) do
    local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
    if #first > 0 then
      local w = math.max(tonumber(first[2]) - now, 0)
      if wait < 0 or w < wait then wait = w end
    end
  end
end
return {moved, wait}
`)

// partPace is how the dispatcher paces one partition.
type partPace struct {
	hot   bool          // the last round moved requests there
	wait  time.Duration // its back-off: Interval, doubled up to IdleInterval while nothing moves
	next  time.Time     // it is not looked at nor dispatched before this (local clock), unless woken
	empty bool          // its last look found no host ready or scheduled and no lease
}

// backoff paces a partition where a round found nothing to move: it is left alone for
// its doubled wait (at most IdleInterval), and no longer than until wake (zero: not
// known). A look's wake is an Interval before its earliest schedule or lease entry
// (read on the local clock, so ahead of the Redis one); a dispatch's is when that entry
// is due when it left no host ready (counted by the script on the Redis clock from its
// own now, so due then on any clock). A dispatch that left hosts ready (the requests
// stream's window was full) gives none: the fetchers' finishing turns hand those out as
// the window drains. Without a wake the hosts of a crawl held back only by politeness,
// which come due together, would wait for the doubled wait.
func (p *partPace) backoff(now, wake time.Time, cfg Config) {
	p.wait = min(max(2*p.wait, cfg.Interval), cfg.IdleInterval)
	p.next = now.Add(p.wait)
	if !wake.IsZero() && wake.Before(p.next) {
		p.next = wake
	}
}

// wakePart makes the dispatcher look at partition part in its next round: this
// process emitted requests there or moved due retries back to their hosts there.
func (f *Frontier) wakePart(part int) { f.wake[part].Store(true) }

// round runs one dispatch round over every partition and returns how many requests it
// moved, and whether every partition's frontier was empty: no host ready, scheduled or
// holding a lease. A partition where the last round moved requests is dispatched again
// without a look first (a busy frontier, as in a broad crawl, has something due nearly
// every round: the look would be one more round trip for Redis to wake up to); the
// others are looked at first, after a pipelined look (ZCARD, ZRANGE): a script call
// costs Redis several times what a look does. A partition where a round found nothing
// to move (a look with nothing due; with FinishHandsOut also a dispatch that moved
// none: no host ready, or the requests stream's window full, which the fetchers'
// finishing turns hand out into as it empties) is left alone, when paced (Run's
// rounds), for a wait that doubles up to IdleInterval, and no longer than until its
// earliest schedule or lease entry is due or this process emits or moves due retries
// there (wakePart). Politeness does not depend on it: the scripts decide who may
// start, on the Redis clock.
func (f *Frontier) round(ctx context.Context, paced bool) (moved int, idle bool, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	total := 0
	var firstErr error
	var toLook []int
	act := make([]bool, len(f.pace))
	for part := range f.pace {
		pc := &f.pace[part]
		if f.wake[part].Swap(false) {
			pc.next, pc.wait = time.Time{}, f.cfg.Interval
		}
		switch {
		case pc.hot:
			act[part] = true
		case !paced || !now.Before(pc.next):
			act[part] = true
			toLook = append(toLook, part)
		}
	}
	var looks map[int]partLook
	if len(toLook) > 0 {
		looks = f.look(ctx, toLook)
	}
	idle = true
	for part := range f.pace {
		pc := &f.pace[part]
		if !act[part] {
			idle = idle && pc.empty
			continue
		}
		if l, ok := looks[part]; ok {
			pc.empty = l.empty
			if !l.due {
				pc.backoff(now, l.wake, f.cfg)
				idle = idle && pc.empty
				continue
			}
		}
		idle, pc.empty = false, false
		n, due, err := f.dispatchPart(ctx, part)
		pc.hot = n > 0
		if n > 0 || err != nil || !f.cfg.FinishHandsOut {
			pc.next, pc.wait = time.Time{}, f.cfg.Interval
		} else {
			pc.backoff(now, due, f.cfg)
		}
		total += n
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return total, idle, firstErr
}

// partLook is what a look at a partition's frontier found.
type partLook struct {
	due   bool      // a host is ready, a host's time comes within the interval, or a lease expires
	empty bool      // no host is ready or scheduled, and no lease is held
	wake  time.Time // an Interval before the earliest schedule or lease entry (local clock; zero: none)
}

// look looks at partitions parts' frontiers in one pipeline of three commands per
// partition: how many hosts are ready, and the earliest entry of the schedule and of
// the leases (ZRANGE 0 0 WITHSCORES), which says both whether one is due within the
// interval and whether any is there. The answer is only a hint (the script decides, on
// the Redis clock; the look uses the local one, an interval ahead to allow for skew);
// a failed look counts as "due".
func (f *Frontier) look(ctx context.Context, parts []int) map[int]partLook {
	soon := float64(time.Now().Add(f.cfg.Interval).UnixMilli())
	ready := make([]*redis.IntCmd, len(parts))
	first := make([][2]*redis.ZSliceCmd, len(parts))
	_, _ = f.rdb.Pipelined(ctx, func(p redis.Pipeliner) error { // errors are read per command
		for i, part := range parts {
			k := f.layout.Parts[part]
			ready[i] = p.ZCard(ctx, k.Ready)
			first[i] = [2]*redis.ZSliceCmd{p.ZRangeWithScores(ctx, k.Sched, 0, 0), p.ZRangeWithScores(ctx, k.Leases, 0, 0)}
		}
		return nil
	})
	out := make(map[int]partLook, len(parts))
	for i, part := range parts {
		some := ready[i].Err() != nil || ready[i].Val() > 0
		l := partLook{due: some, empty: !some}
		for _, c := range first[i] {
			zs, err := c.Result()
			if err != nil {
				l.due, l.empty = true, false
				continue
			}
			if len(zs) > 0 {
				l.empty = false
				l.due = l.due || zs[0].Score <= soon
				if at := time.UnixMilli(int64(zs[0].Score)).Add(-f.cfg.Interval); l.wake.IsZero() || at.Before(l.wake) {
					l.wake = at
				}
			}
		}
		out[part] = l
	}
	return out
}

// dispatchPart runs one round in partition part. It returns how many requests it moved
// and, when the round left no host ready, when its earliest schedule or lease entry is
// due (zero: a host is ready, or there is none).
func (f *Frontier) dispatchPart(ctx context.Context, part int) (int, time.Time, error) {
	if f.beforeRun != nil { // set by tests only (export_test.go)
		if err := f.beforeRun(f.cfg.Window); err != nil {
			return 0, time.Time{}, fmt.Errorf("frontier: dispatch: %w", err)
		}
	}
	keys := schedKeys(f.layout.Parts[part])
	args := schedArgs(f.hosts, partIDPrefix(part), f.cfg.Window, f.cfg.CountUnread, f.order.sign(), maxHandOut)
	total := 0
	for range 64 { // a window larger than maxHandOut fills in several calls
		res, err := dispatchScript.Run(ctx, f.rdb, keys, args...).Int64Slice()
		if err == nil && len(res) != 2 {
			err = errShortReply
		}
		if err != nil {
			return total, time.Time{}, fmt.Errorf("frontier: dispatch: %w", err)
		}
		total += int(res[0])
		if res[0] < maxHandOut {
			var due time.Time
			if res[1] >= 0 {
				due = time.Now().Add(time.Duration(res[1]) * time.Millisecond)
			}
			return total, due, nil
		}
	}
	return total, time.Time{}, nil
}

// runDispatch dispatches every Interval until ctx ends, and less often while every
// frontier is empty (see Config.IdleInterval). A host's next request is handed out
// within about an Interval of its time. A failed round is logged and tried again; it
// returns nil when ctx ends.
func (f *Frontier) runDispatch(ctx context.Context) error {
	wait := f.cfg.Interval
	return loop.Paced(ctx, wait, loop.Config{Log: f.cfg.Logger, Msg: "dispatch failed; retrying"}, func(ctx context.Context) (time.Duration, error) {
		_, idle, err := f.round(ctx, true)
		if idle && err == nil {
			wait = min(2*wait, f.cfg.IdleInterval)
		} else {
			wait = f.cfg.Interval
		}
		return wait, err
	})
}
