package streams

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"
	"github.com/streamcrawl/streamcrawl/streams/loop"
	"go.uber.org/zap"
)

// deadLetterScript moves one entry to dead letters and acks it, if it is still the
// consumer's: a consumer that was paused or cut off while another took its entry over
// must not kill an entry the other is doing.
//
// KEYS[1] -> stream
// KEYS[2] -> dead-letter stream
// ARGV[1] -> group, ARGV[2] -> entry ID, ARGV[3] -> consumer, ARGV[4] -> deliveries,
// ARGV[5] -> error
// Output: 1 when moved, 0 when the entry is not the consumer's
var deadLetterScript = redis.NewScript(rkit.LuaDead + `
local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[2], ARGV[2], 1)
if #p == 0 or p[1][2] ~= ARGV[3] then return 0 end
dead(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5])
return 1
`)

// deadLetter moves entry id to dead letters, retrying through a Redis outage until it
// lands or the subscription's hard deadline passes (then the entry stays pending), or
// until Redis says the group is gone.
func (s *subscription) deadLetter(id string, deliveries int, reason string) {
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(s.hard, 5*time.Second)
		moved, err := deadLetterScript.Run(ctx, s.rdb, []string{s.stream, s.dead},
			s.cfg.Group, id, s.cfg.Consumer, strconv.Itoa(deliveries), reason).Int()
		cancel()
		if err == nil {
			if moved == 1 {
				s.cfg.event("dead_letter", 1)
			} else {
				s.log.Info("entry not dead-lettered: another consumer holds it now", zap.String("entry_id", id))
			}
			return
		}
		if isNoGroup(err) {
			// The stream or its group is gone (FLUSHALL, reset, a primary without the
			// data): so is the entry's place in the group, and no retry brings it back.
			// Retrying only held the stop up to the shutdown deadline.
			s.log.Warn("entry not dead-lettered: its stream or group is gone", zap.String("entry_id", id), zap.Error(err))
			return
		}
		s.errLog.Warn("dead-letter failed; retrying", err, zap.String("id", id))
		if !sleepCtx(s.hard, loop.Backoff(100*time.Millisecond, 2*time.Second, attempt)) {
			return
		}
	}
}
