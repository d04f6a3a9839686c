package streams

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// A read whose reply was lost (the connection reset or timed out mid-reply) may have
// delivered entries to us in Redis that this process never saw; the client then sends
// the read again and it returns what came since, so the read loop sees no failure.
// Nobody would handle those entries: the read loop reads only new entries ('>'), and
// other consumers reclaim them only after MinIdle, while each may hold a slot of its
// host. So at each tick the claimer adopts them: our pending entries that this process
// does not hold (in hand, waiting for a slot or a redelivery, or acked with the ack not
// sent yet) and that have been idle for orphanAge, claimed to us again and handed out.
// It costs one XPENDING of our own entries a tick.

// orphanAge is how long one of our entries must have been idle, unheld by this process,
// to be taken for one a lost reply delivered (a read registers what it returns at once).
const orphanAge = time.Second

// adoptScript claims back entries that are still the consumer's and idle at least
// min-idle, returning them as claimScript does. Their delivery counts stay as they were
// (RETRYCOUNT): an adoption is no failed attempt of theirs but ours, a reply lost or a
// verdict dropped for a hold we could not confirm (through a failover, every entry in
// hand), and counted as deliveries they went to the dead letters after a few outages,
// never fetched.
//
// KEYS[1] -> stream
// ARGV[1] -> group, ARGV[2] -> consumer, ARGV[3] -> min idle (ms), ARGV[4..] -> IDs
// Output: {{id, deliveries, fields}...}
var adoptScript = redis.NewScript(`
local out = {}
for i = 4, #ARGV do
  local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1)
  if #p > 0 and p[1][2] == ARGV[2] and tonumber(p[1][3]) >= tonumber(ARGV[3]) then
    local c = redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[i], 'RETRYCOUNT', p[1][4])
    if #c > 0 and c[1] then out[#out + 1] = {ARGV[i], tonumber(p[1][4]), c[1][2]} end
  end
end
return out
`)

// adoptOrphans hands out the entries a lost reply delivered to us (see above).
func (s *subscription) adoptOrphans() {
	if !s.adopting.Load() {
		return // readOwnPending hands out what a previous life left
	}
	ctx, cancel := context.WithTimeout(s.hard, 10*time.Second)
	defer cancel()
	pend, err := s.rdb.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: s.stream, Group: s.cfg.Group,
		Consumer: s.cfg.Consumer, Idle: orphanAge, Start: "-", End: "+", Count: 1000}).Result()
	if err != nil {
		return // tried again at the next tick
	}
	args := []any{s.cfg.Group, s.cfg.Consumer, orphanAge.Milliseconds()}
	for _, p := range pend {
		if !s.holds(p.ID) {
			args = append(args, p.ID)
		}
	}
	if len(args) == 3 {
		return
	}
	sent := time.Now()
	res, err := adoptScript.Run(ctx, s.rdb, []string{s.stream}, args...).Slice()
	if err != nil {
		return
	}
	if len(res) > 0 {
		s.log.Info("entries a lost read reply delivered to us handed out", zap.Int("entries", len(res)))
	}
	for _, raw := range res {
		e, ok := raw.([]any)
		if !ok || len(e) != 3 {
			continue
		}
		id, _ := e[0].(string)
		n, _ := e[1].(int64)
		if !s.dispatchFields(id, e[2], int(n), sent) {
			return
		}
	}
}
