package streams

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// ErrNotHeld means the entry a handler works on is no longer its consumer's, or cannot
// be confirmed to be: another consumer took it over (XAUTOCLAIM) while this one was
// paused or cut off from Redis, or someone acked it. A handler that gets it must not
// act on the entry (no request to a site, no output, no slot given back): the
// subscription drops the message without an ack, and whoever holds the entry does its
// work. When the entry was still ours after all, it is taken back by a reclaim after
// MinIdle.
var ErrNotHeld = errors.New("streams: the entry is no longer this consumer's")

// A consumer's entry is fenced by time, as a lease: another consumer takes it over only
// once it has been idle for MinIdle (XAUTOCLAIM's min-idle), and its idle time restarts
// at every command that delivers it to us or renews it (XREADGROUP, XCLAIM). So for
// MinIdle after the moment such a command left this process, measured on this
// process's clock, nobody else can hold it. A paused process (SIGSTOP, a long GC pause,
// a VM migration, a throttled container, a partition) wakes with its clock advanced:
// whatever it then checks with Held is either within the window, or confirmed in Redis
// at once (and renewed), or refused. holdWindow leaves a quarter of MinIdle as margin
// for the clocks' rates and for what runs between a check and the act it guards.
//
// The guarantee needs every consumer of a group to use the same MinIdle (the default,
// or one --min-idle for the whole fleet).
func holdWindow(minIdle time.Duration) time.Duration { return minIdle * 3 / 4 }

// hold is what a consumer knows of one entry it holds (see holdWindow).
type hold struct {
	s      *subscription
	id     string
	cancel context.CancelFunc // ends the message's context when the hold is lost

	mu      sync.Mutex
	renewed time.Time // when the last command that restarted its idle time for us left; zero: never confirmed
	lost    bool      // taken over, or refused by Held: the handler's verdict is ignored
}

// holdKey is the context key of a message's hold.
type holdKey struct{}

// Held reports whether the entry of the message whose context is ctx is still this
// consumer's: nil when it is (within its window by the local clock, or confirmed in
// Redis now, which renews it), an error wrapping ErrNotHeld when it is not or Redis
// cannot confirm it in time. A context that did not come from a Subscriber is always
// held. Handlers call it right before every act on the world that another consumer may
// be doing too: a request to a site, a write of output.
func Held(ctx context.Context) error {
	h, _ := ctx.Value(holdKey{}).(*hold)
	if h == nil {
		return nil
	}
	return h.check(ctx)
}

// Holder returns the name of the consumer holding the entry of the message whose
// context is ctx ("" when it did not come from a Subscriber): scripts that act for an
// entry compare it with the entry's owner in the pending list.
func Holder(ctx context.Context) string {
	if h, _ := ctx.Value(holdKey{}).(*hold); h != nil {
		return h.s.cfg.Consumer
	}
	return ""
}

// check is Held for h.
func (h *hold) check(ctx context.Context) error {
	h.mu.Lock()
	lost, renewed := h.lost, h.renewed
	h.mu.Unlock()
	if lost {
		return ErrNotHeld
	}
	if !renewed.IsZero() && time.Since(renewed) < holdWindow(h.s.cfg.MinIdle) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(5*time.Second, h.s.cfg.MinIdle/4))
	defer cancel()
	mine, err := h.s.renew(ctx, []*hold{h})
	switch {
	case err != nil:
		h.lose()
		return fmt.Errorf("%w: could not confirm entry %s in Redis: %w", ErrNotHeld, h.id, err)
	case len(mine) == 0:
		return ErrNotHeld
	}
	return nil
}

// confirm records that a command which restarted the entry's idle time for us left at
// sent.
func (h *hold) confirm(sent time.Time) {
	h.mu.Lock()
	if sent.After(h.renewed) {
		h.renewed = sent
	}
	h.mu.Unlock()
}

// lose marks the hold lost and ends the message's context (a fetch in flight for it
// stops). It reports whether it was held until now.
func (h *hold) lose() bool {
	h.mu.Lock()
	was := !h.lost
	h.lost = true
	cancel := h.cancel
	h.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	return was
}

// isLost reports whether the hold was lost.
func (h *hold) isLost() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lost
}

// age is how long ago the hold was last confirmed (forever when never).
func (h *hold) age() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.renewed.IsZero() {
		return time.Duration(1<<63 - 1)
	}
	return time.Since(h.renewed)
}

// renewScript restarts the idle time of the entries that are still the consumer's (an
// XCLAIM with min-idle 0 of an entry another consumer took over would take it back from
// a live one) and returns their IDs.
//
// KEYS[1] -> stream
// ARGV[1] -> group, ARGV[2] -> consumer, ARGV[3..] -> entry IDs
var renewScript = redis.NewScript(`
local mine = {}
for i = 3, #ARGV do
  local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1)
  if #p > 0 and p[1][2] == ARGV[2] then mine[#mine + 1] = ARGV[i] end
end
if #mine > 0 then
  -- unpack(mine) must come last: in the middle of a call's arguments Lua keeps its first value only
  local args = {KEYS[1], ARGV[1], ARGV[2], 0}
  for _, id in ipairs(mine) do args[#args + 1] = id end
  args[#args + 1] = 'JUSTID'
  redis.call('XCLAIM', unpack(args))
end
return mine
`)

// renew confirms in Redis which of holds are still ours, restarting their idle time,
// and marks the others lost. It returns those still ours.
func (s *subscription) renew(ctx context.Context, holds []*hold) ([]*hold, error) {
	args := make([]any, 0, 2+len(holds))
	args = append(args, s.cfg.Group, s.cfg.Consumer)
	for _, h := range holds {
		args = append(args, h.id)
	}
	sent := time.Now()
	ids, err := renewScript.Run(ctx, s.rdb, []string{s.stream}, args...).StringSlice()
	if err != nil {
		return nil, err
	}
	ours := make(map[string]bool, len(ids))
	for _, id := range ids {
		ours[id] = true
	}
	var mine []*hold
	lost := 0
	for _, h := range holds {
		if ours[h.id] {
			h.confirm(sent)
			mine = append(mine, h)
		} else if h.lose() {
			lost++
		}
	}
	if lost > 0 {
		s.cfg.event("entries_taken_over", int64(lost))
		s.log.Warn("entries this consumer held were taken over by another (it was paused or cut off longer than min-idle); dropping its work on them",
			zap.Int("entries", lost), zap.Duration("min_idle", s.cfg.MinIdle))
	}
	return mine, nil
}
