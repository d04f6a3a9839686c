package streams

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/streams/loop"
)

// redeliverScript takes a nacked entry back for another delivery, or moves it to dead
// letters when it has had its deliveries.
//
// KEYS[1] -> stream
// KEYS[2] -> dead-letter stream
// ARGV[1] -> group, ARGV[2] -> consumer, ARGV[3] -> entry ID, ARGV[4] -> max deliveries,
// ARGV[5] -> last error
// Output: {deliveries, fields} when claimed back (deliveries counts this one); {-1} when
// dead-lettered; {0} when the entry is no longer ours (acked, deleted or taken over).
var redeliverScript = redis.NewScript(rkit.LuaDead + `
local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[3], ARGV[3], 1)
if #p == 0 or p[1][2] ~= ARGV[2] then return {0} end
local n = tonumber(p[1][4])
if n >= tonumber(ARGV[4]) then
  dead(KEYS[1], KEYS[2], ARGV[1], ARGV[3], ARGV[2], n, ARGV[5])
  return {-1}
end
local c = redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[3])
if #c == 0 or not c[1] then
  redis.call('XACK', KEYS[1], ARGV[1], ARGV[3])
  return {0}
end
return {n + 1, c[1][2]}
`)

// retry redelivers a nacked entry after a backoff that grows with its deliveries. It
// runs in its own goroutine, counted in waiters.
func (s *subscription) retry(id string, deliveries int, lastErr string) {
	defer s.waiters.Done()
	defer func() {
		s.mu.Lock()
		delete(s.retrying, id)
		s.mu.Unlock()
	}()
	if lastErr == "" {
		lastErr = "handler failed (no error recorded)"
	}
	wait := loop.Backoff(s.cfg.RetryBackoff, s.cfg.MaxRetryBackoff, deliveries)
	if !sleepCtx(s.ctx, wait) {
		return // shutting down: stays pending for our restart or a reclaim
	}
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
		sent := time.Now()
		res, err := redeliverScript.Run(ctx, s.rdb, []string{s.stream, s.dead},
			s.cfg.Group, s.cfg.Consumer, id, s.cfg.MaxDeliveries, lastErr).Slice()
		cancel()
		if err == nil {
			s.redelivered(id, res, lastErr, sent)
			return
		}
		s.errLog.Warn("redeliver failed; retrying", err, zap.String("id", id))
		if !sleepCtx(s.ctx, loop.Backoff(time.Second, 5*time.Second, attempt)) {
			return
		}
	}
}

// redelivered dispatches what redeliverScript, which left at sent, returned.
func (s *subscription) redelivered(id string, res []any, lastErr string, sent time.Time) {
	n, _ := res[0].(int64)
	switch {
	case n < 0:
		s.log.Warn("entry moved to dead letters", zap.String("entry_id", id), zap.String("error", lastErr))
		return
	case n == 0 || len(res) < 2:
		return
	}
	s.dispatchFields(id, res[1], int(n), sent)
}

// dispatchFields hands out entry id, whose fields a script returned as a flat list
// (deliveries: its delivery count; sent: when the script that claimed it left), once a
// slot is free, or dead-letters it when they cannot be read. It returns false when the
// subscription shuts down first.
func (s *subscription) dispatchFields(id string, flat any, deliveries int, sent time.Time) bool {
	fields, err := pairsToMap(flat)
	if err != nil {
		s.deadLetter(id, deliveries, err.Error())
		return true
	}
	if !s.acquire() {
		return false
	}
	s.dispatch(redis.XMessage{ID: id, Values: fields}, deliveries, sent)
	return true
}

// pairsToMap turns a flat [field, value, ...] script reply into stream values.
func pairsToMap(v any) (map[string]any, error) {
	flat, ok := v.([]any)
	if !ok || len(flat)%2 != 0 {
		return nil, fmt.Errorf("streams: malformed entry fields %T", v)
	}
	m := make(map[string]any, len(flat)/2)
	for i := 0; i < len(flat); i += 2 {
		k, ok := flat[i].(string)
		if !ok {
			return nil, fmt.Errorf("streams: malformed entry field name %T", flat[i])
		}
		m[k] = flat[i+1]
	}
	return m, nil
}
