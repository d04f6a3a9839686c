package streams

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"
	"go.uber.org/zap"
)

// claimScript takes over entries idle longer than min-idle (their consumer died or hung)
// and dead-letters those that have had their deliveries.
//
// KEYS[1] -> stream
// KEYS[2] -> dead-letter stream
// ARGV[1] -> group, ARGV[2] -> consumer, ARGV[3] -> min idle (ms), ARGV[4] -> cursor,
// ARGV[5] -> count, ARGV[6] -> max deliveries
// Output: {next cursor, dead-lettered count, {id, deliveries, fields}...}
var claimScript = redis.NewScript(rkit.LuaDead + `
local r = redis.call('XAUTOCLAIM', KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4], 'COUNT', ARGV[5])
local out = {r[1], 0}
local maxd = tonumber(ARGV[6])
for _, e in ipairs(r[2]) do
  if e then
    local p = redis.call('XPENDING', KEYS[1], ARGV[1], e[1], e[1], 1)
    local n = 1
    if #p > 0 then n = tonumber(p[1][4]) end
    if n > maxd then
      dead(KEYS[1], KEYS[2], ARGV[1], e[1], ARGV[2], n - 1,
           'delivered ' .. (n - 1) .. ' times without an ack (consumer died or timed out)')
      out[2] = out[2] + 1
    else
      out[#out + 1] = {e[1], n, e[2]}
    end
  end
end
return out
`)

// claimLoop reclaims idle entries of other consumers every ClaimInterval, adopts the
// orphans of lost read replies and removes consumers that are gone; the heartbeat runs
// beside it (heartbeatLoop), since a reclaim can wait for a free slot while every
// handler is busy, and the entries those handlers hold must be renewed meanwhile.
func (s *subscription) claimLoop() {
	s.claimer.Add(1)
	go func() { defer s.claimer.Done(); s.heartbeatLoop() }()
	tick := time.NewTicker(min(s.cfg.ClaimInterval, s.cfg.MinIdle/3))
	defer tick.Stop()
	lastClaim, lastSweep := time.Time{}, time.Now()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-tick.C:
		}
		s.adoptOrphans()
		if time.Since(lastClaim) >= s.cfg.ClaimInterval {
			lastClaim = time.Now()
			s.reclaim()
		}
		if time.Since(lastSweep) >= 10*s.cfg.MinIdle {
			lastSweep = time.Now()
			s.sweepConsumers()
		}
	}
}

// reclaim loops XAUTOCLAIM over the whole pending list, dispatching what it takes.
func (s *subscription) reclaim() {
	cursor := "0-0"
	for s.ctx.Err() == nil {
		// Claim no more than there are free slots, so claimed entries never wait long.
		free := max(s.free(), 1)
		// Not cancelled mid-call: claimed entries must reach us (see readOwnPending).
		ctx, cancel := context.WithTimeout(s.hard, 10*time.Second)
		sent := time.Now()
		res, err := claimScript.Run(ctx, s.rdb, []string{s.stream, s.dead},
			s.cfg.Group, s.cfg.Consumer, s.cfg.MinIdle.Milliseconds(), cursor,
			min(free, s.cfg.ClaimBatch), s.cfg.MaxDeliveries).Slice()
		cancel()
		if err != nil {
			if s.ctx.Err() == nil {
				s.errLog.Warn("reclaim failed", err)
			}
			return
		}
		next, _ := res[0].(string)
		if dead, _ := res[1].(int64); dead > 0 {
			s.cfg.event("dead_letter", dead)
			s.log.Warn("entries over their delivery limit moved to dead letters", zap.Int64("count", dead))
		}
		for _, raw := range res[2:] {
			e, ok := raw.([]any)
			if !ok || len(e) != 3 {
				continue
			}
			id, _ := e[0].(string)
			n, _ := e[1].(int64)
			if s.holds(id) {
				// Ours and still being handled or acked: a stall (GC, a loaded machine)
				// kept the heartbeat from refreshing it. The claim refreshed its idle
				// time (so renewed our hold); handing it out again would do its work
				// twice.
				if h := s.holdOf(id); h != nil && !h.isLost() {
					h.confirm(sent)
				}
				s.log.Debug("idle entry is still ours in flight", zap.String("id", id))
				continue
			}
			s.log.Info("reclaimed idle entry", zap.String("id", id), zap.Int64("deliveries", n))
			s.cfg.event("reclaimed", 1)
			if !s.dispatchFields(id, e[2], int(n), sent) {
				return
			}
		}
		if next == "" || next == "0-0" {
			return
		}
		cursor = next
	}
}

// holds reports whether id is one of this consumer's entries in flight or waiting for
// its ack to be sent.
func (s *subscription) holds(id string) bool {
	s.mu.Lock()
	_, ok := s.inflight[id]
	ok = ok || s.retrying[id]
	s.mu.Unlock()
	return ok || s.acks.queued(id)
}

// heartbeatLoop renews our holds every sixth of MinIdle (see heartbeat).
func (s *subscription) heartbeatLoop() {
	tick := time.NewTicker(s.cfg.MinIdle / 6)
	defer tick.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-tick.C:
		}
		s.heartbeat()
	}
}

// heartbeat renews our holds on the entries in flight that were last confirmed
// MinIdle/3 ago or more, so that a slow but live handler is not robbed by another
// consumer's reclaim, and learns which were taken over while we could not renew them
// (we were paused or cut off): those are marked lost, and their handlers' contexts end.
func (s *subscription) heartbeat() {
	limit := s.cfg.MinIdle / 3
	var due []*hold
	s.mu.Lock()
	for _, h := range s.inflight {
		if !h.isLost() && h.age() >= limit {
			due = append(due, h)
		}
	}
	s.mu.Unlock()
	for i := 0; i < len(due); i += 500 {
		ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
		_, err := s.renew(ctx, due[i:min(i+500, len(due))])
		cancel()
		if err != nil {
			if s.ctx.Err() == nil {
				s.errLog.Warn("heartbeat failed", err)
			}
			return
		}
	}
}

// sweepConsumers deletes consumers that hold nothing pending and have been idle for
// 10×MinIdle. A consumer that still holds entries is never deleted.
func (s *subscription) sweepConsumers() {
	ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
	defer cancel()
	cons, err := s.rdb.XInfoConsumers(ctx, s.stream, s.cfg.Group).Result()
	if err != nil {
		return
	}
	for _, c := range cons {
		if c.Name == s.cfg.Consumer || c.Pending > 0 || c.Idle < 10*s.cfg.MinIdle {
			continue
		}
		s.removeIdleConsumer(ctx, c.Name, c.Idle)
	}
}

// removeIdleConsumer deletes consumer name, which the caller saw idle for idle with
// nothing pending. XGROUP DELCONSUMER drops the consumer's pending entries, so the
// script checks again atomically and deletes it only if it still holds none.
func (s *subscription) removeIdleConsumer(ctx context.Context, name string, idle time.Duration) {
	if s.deleteConsumer(ctx, name) {
		s.log.Info("removed idle consumer", zap.String("gone", name), zap.Duration("idle", idle))
	}
}

// deleteConsumer deletes consumer name from the subscription's group if it holds no
// pending entries, and reports whether it did.
func (s *subscription) deleteConsumer(ctx context.Context, name string) bool {
	removed, err := delIdleConsumerScript.Run(ctx, s.rdb, []string{s.stream}, s.cfg.Group, name).Int()
	return err == nil && removed == 1
}

// delIdleConsumerScript deletes a consumer only if it holds no pending entries.
//
// KEYS[1] -> stream
// ARGV[1] -> group, ARGV[2] -> consumer
// Output: 1 if deleted, 0 if it holds entries
var delIdleConsumerScript = redis.NewScript(`
local p = redis.call('XPENDING', KEYS[1], ARGV[1], '-', '+', 1, ARGV[2])
if #p > 0 then return 0 end
redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], ARGV[2])
return 1
`)
