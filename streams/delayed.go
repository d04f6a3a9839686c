package streams

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// DefaultDelayedInterval is how often due delayed requests are moved to the stream.
const DefaultDelayedInterval = 100 * time.Millisecond

// Delayed is the crawl's set of requests waiting for a time (retries with backoff, and
// later per-host politeness): a ZSET scored by due time in Unix milliseconds whose
// members are encoded requests. Due members move to the requests stream in one Lua
// script, so a crash never loses or doubles one; every fetch process runs the mover and
// any number may run at once. Each partition of the crawl has its own set; a request
// waits in its host's.
type Delayed struct {
	rdb    redis.UniversalClient
	layout Layout
	b      *batcher
	now    func() time.Time
}

// NewDelayed returns the delayed sets of the crawl.
func NewDelayed(rdb redis.UniversalClient, layout Layout) (*Delayed, error) {
	if rdb == nil {
		return nil, errors.New("streams: delayed set needs a redis client")
	}
	return &Delayed{rdb: rdb, layout: layout, b: newBatcher(rdb, 64, DefaultPublishTimeout, DefaultPublishLinger), now: time.Now}, nil
}

// Schedule adds an encoded request for host to be queued at due. The payload must be
// unique (it is a ZSET member): encode the attempt number into it.
func (d *Delayed) Schedule(ctx context.Context, host string, payload []byte, due time.Time) error {
	key := d.layout.ForHost(host).Delayed()
	_, err := d.b.do(ctx, func(ctx context.Context, p redis.Pipeliner) redis.Cmder {
		return p.ZAdd(ctx, key, redis.Z{Score: float64(due.UnixMilli()), Member: payload})
	})
	if err != nil {
		return fmt.Errorf("streams: schedule retry: %w", err)
	}
	return nil
}

// moveDueScript moves due members of the delayed set to the requests stream.
//
// KEYS[1] -> sc:{c}:delayed
// KEYS[2] -> sc:{c}:requests
// KEYS[3] -> sc:{c}:seq
// ARGV[1] -> now (Unix ms), ARGV[2] -> max to move
// Output: number moved
var moveDueScript = redis.NewScript(`
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
if #due == 0 then return 0 end
local seq = redis.call('INCRBY', KEYS[3], #due) - #due
for i, m in ipairs(due) do
  redis.call('XADD', KEYS[2], '*', '_watermill_message_uuid', 'sc-' .. (seq + i), 'metadata', '', 'payload', m)
  redis.call('ZREM', KEYS[1], m)
end
return #due
`)

// MoveDue moves up to max due requests of partition part to its requests stream and
// returns how many.
func (d *Delayed) MoveDue(ctx context.Context, part, max int) (int, error) {
	k := d.layout.Part(part)
	n, err := moveDueScript.Run(ctx, d.rdb, []string{k.Delayed(), k.Requests(), k.Seq()},
		strconv.FormatInt(d.now().UnixMilli(), 10), max).Int()
	if err != nil {
		return 0, fmt.Errorf("streams: move due requests: %w", err)
	}
	return n, nil
}

// Run moves due requests every interval until ctx ends.
func (d *Delayed) Run(ctx context.Context, interval time.Duration, log *zap.Logger) {
	if log == nil {
		log = zap.NewNop()
	}
	errLog := newRateLimited(log, 5*time.Second)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		due := d.due(ctx)
		for part := range d.layout.N() {
			if !due[part] {
				continue
			}
			for {
				n, err := d.MoveDue(ctx, part, 100)
				if err != nil {
					if ctx.Err() == nil {
						errLog.Warn("moving delayed requests failed; retrying", err)
					}
					break
				}
				if n < 100 {
					break
				}
			}
		}
	}
}

// due reports, per partition, whether its delayed set holds a due request, with one
// pipelined ZCOUNT: most rounds find none, and a ZCOUNT costs Redis a fraction of a
// script call. A failed look counts as "holds some" (the script then reports).
func (d *Delayed) due(ctx context.Context) []bool {
	now := strconv.FormatInt(d.now().UnixMilli(), 10)
	return d.layout.holding(ctx, d.rdb, func(p redis.Pipeliner, k Keys) *redis.IntCmd {
		return p.ZCount(ctx, k.Delayed(), "-inf", now)
	})
}

// Close stops the delayed set's batcher.
func (d *Delayed) Close() { d.b.close() }
