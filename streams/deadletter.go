package streams

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// Fields a dead-letter entry carries besides the original entry's own fields.
const (
	DeadFieldStream     = "sc_stream"
	DeadFieldID         = "sc_id"
	DeadFieldStage      = "sc_stage"
	DeadFieldError      = "sc_error"
	DeadFieldDeliveries = "sc_deliveries"
	DeadFieldConsumer   = "sc_consumer"
)

// deadLetterLua defines dead(): copy an entry to the dead-letter stream with why it died,
// then ack it. Scripts that can kill an entry start with it, so the move is atomic.
const deadLetterLua = `
local function dead(stream, deadstream, group, id, consumer, deliveries, err)
  local fields = {'sc_stream', stream, 'sc_id', id, 'sc_stage', group, 'sc_error', err,
                  'sc_deliveries', tostring(deliveries), 'sc_consumer', consumer}
  local e = redis.call('XRANGE', stream, id, id)
  if #e > 0 then
    for _, v in ipairs(e[1][2]) do fields[#fields + 1] = v end
  end
  redis.call('XADD', deadstream, '*', unpack(fields))
  redis.call('XACK', stream, group, id)
end
`

// deadLetterScript moves one entry to dead letters and acks it.
//
// KEYS[1] -> stream
// KEYS[2] -> dead-letter stream
// ARGV[1] -> group, ARGV[2] -> entry ID, ARGV[3] -> consumer, ARGV[4] -> deliveries,
// ARGV[5] -> error
// Output: 1
var deadLetterScript = redis.NewScript(deadLetterLua + `
dead(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5])
return 1
`)

// deadLetter moves entry id to dead letters, retrying through a Redis outage until it
// lands or the subscription's hard deadline passes (then the entry stays pending).
func (s *subscription) deadLetter(id string, deliveries int, reason string) {
	backoff := 100 * time.Millisecond
	for {
		ctx, cancel := context.WithTimeout(s.hard, 5*time.Second)
		err := deadLetterScript.Run(ctx, s.rdb, []string{s.stream, s.dead},
			s.cfg.Group, id, s.cfg.Consumer, strconv.Itoa(deliveries), reason).Err()
		cancel()
		if err == nil {
			s.cfg.event("dead_letter", 1)
			return
		}
		s.errLog.Warn("dead-letter failed; retrying", err, zap.String("id", id))
		if !sleepCtx(s.hard, backoff) {
			return
		}
		backoff = min(backoff*2, 2*time.Second)
	}
}
