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
// Output: number of requests moved
var dispatchScript = schedScript("", `
local now = now_ms()
expire_leases(now, 1000)
promote(now, 1000)
local moved = 0
zflush(S.ready)
if redis.call('ZCARD', S.ready) > 0 then
  local r = room(tonumber(ARGV[11]))
  if r > 0 then moved = hand_out(r, now) end
end
commit()
return moved
`)

// round runs one dispatch round over every partition and returns how many requests it
// moved, and whether every partition's frontier was empty:
// no host ready, scheduled or holding a lease. A partition where the last round moved
// requests is dispatched again without a look first (a busy frontier, as in a broad
// crawl, has something due nearly every round: the look would be one more round trip
// for Redis to wake up to); the others are looked at first, after a pipelined look
// (ZCARD, ZRANGE): most rounds find nothing to move, and a script call costs Redis
// several times what a look does.
func (f *Frontier) round(ctx context.Context) (moved int, idle bool, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	total := 0
	var firstErr error
	var looks []partLook
	for _, h := range f.hot {
		if !h {
			looks = f.look(ctx)
			break
		}
	}
	idle = looks != nil
	for part := range f.hot {
		if looks != nil {
			idle = idle && looks[part].empty
			if !looks[part].due && !f.hot[part] {
				continue
			}
		}
		n, err := f.dispatchPart(ctx, part)
		f.hot[part] = n > 0
		total += n
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return total, idle, firstErr
}

// partLook is what a look at a partition's frontier found.
type partLook struct {
	due   bool // a host is ready, a host's time comes within the interval, or a lease expires
	empty bool // no host is ready or scheduled, and no lease is held
}

// look looks at every partition's frontier in one pipeline of three commands per
// partition: how many hosts are ready, and the earliest entry of the schedule and of
// the leases (ZRANGE 0 0 WITHSCORES), which says both whether one is due within the
// interval and whether any is there. The answer is only a hint (the script decides, on
// the Redis clock; the look uses the local one, an interval ahead to allow for skew);
// a failed look counts as "due".
func (f *Frontier) look(ctx context.Context) []partLook {
	soon := float64(time.Now().Add(f.cfg.Interval).UnixMilli())
	parts := f.layout.Parts
	ready := make([]*redis.IntCmd, len(parts))
	first := make([][2]*redis.ZSliceCmd, len(parts))
	_, _ = f.rdb.Pipelined(ctx, func(p redis.Pipeliner) error { // errors are read per command
		for i, k := range parts {
			ready[i] = p.ZCard(ctx, k.Ready)
			first[i] = [2]*redis.ZSliceCmd{p.ZRangeWithScores(ctx, k.Sched, 0, 0), p.ZRangeWithScores(ctx, k.Leases, 0, 0)}
		}
		return nil
	})
	out := make([]partLook, len(parts))
	for i := range parts {
		some := ready[i].Err() != nil || ready[i].Val() > 0
		out[i].due, out[i].empty = some, !some
		for _, c := range first[i] {
			zs, err := c.Result()
			if err != nil {
				out[i].due, out[i].empty = true, false
				continue
			}
			if len(zs) > 0 {
				out[i].empty = false
				out[i].due = out[i].due || zs[0].Score <= soon
			}
		}
	}
	return out
}

// dispatchPart runs one round in partition part.
func (f *Frontier) dispatchPart(ctx context.Context, part int) (int, error) {
	if f.beforeRun != nil { // set by tests only (export_test.go)
		if err := f.beforeRun(f.cfg.Window); err != nil {
			return 0, fmt.Errorf("frontier: dispatch: %w", err)
		}
	}
	keys := schedKeys(f.layout.Parts[part])
	args := schedArgs(f.hosts, partIDPrefix(part), f.cfg.Window, f.cfg.CountUnread, f.order.sign(), maxHandOut)
	total := 0
	for range 64 { // a window larger than maxHandOut fills in several calls
		n, err := dispatchScript.Run(ctx, f.rdb, keys, args...).Int()
		if err != nil {
			return total, fmt.Errorf("frontier: dispatch: %w", err)
		}
		total += n
		if n < maxHandOut {
			break
		}
	}
	return total, nil
}

// runDispatch dispatches every Interval until ctx ends, and less often while every
// frontier is empty (see Config.IdleInterval). A host's next request is handed out
// within about an Interval of its time. A failed round is logged and tried again; it
// returns nil when ctx ends.
func (f *Frontier) runDispatch(ctx context.Context) error {
	wait := f.cfg.Interval
	return loop.Paced(ctx, wait, loop.Config{Log: f.cfg.Logger, Msg: "dispatch failed; retrying"}, func(ctx context.Context) (time.Duration, error) {
		_, idle, err := f.round(ctx)
		if idle && err == nil {
			wait = min(2*wait, f.cfg.IdleInterval)
		} else {
			wait = f.cfg.Interval
		}
		return wait, err
	})
}
