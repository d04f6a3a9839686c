package frontier

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"

	"github.com/redis/go-redis/v9"
)

// Retries: a request that failed waits for its time in the partition's delayed set, a
// ZSET scored by due time in Unix milliseconds on the Redis clock, whose members are
// encoded requests with their host, band and the host's limit rule. Due members go back to their host's queue
// in one Lua script, so a crash never loses or doubles one, and a retried request obeys
// its host's politeness like any other; Run moves them, in every fetch process, any
// number at once. A request waits in its host's partition's set.

// Retry adds an encoded request for host, of the given priority and depth, to go
// back to its host's queue at due (this machine's clock). The set is scored on the
// Redis clock: the wait left until due is taken now and counted from Redis's time, so
// fetchers whose clocks disagree still agree on when a retry is due. The payload must
// be unique (it is a ZSET member): encode the attempt number into it.
func (f *Frontier) Retry(ctx context.Context, host string, priority, depth int, payload []byte, due time.Time) error {
	key := f.layout.ForHost(host).Delayed
	_, rule := f.ruleOf(host)
	member := "\x02" + host + "\x01" + strconv.Itoa(f.order.band(priority, depth)) + "\x01" + rule + "\x01" + string(payload)
	wait := max(due.Sub(f.now()).Milliseconds(), 0)
	c := &rkit.Call{Script: scheduleScript, Keys: []string{key}, Args: []any{wait, member}}
	err := f.pipe.Do(ctx, c)
	if err == nil {
		err = c.Reply.Err()
	}
	if err != nil {
		return fmt.Errorf("frontier: schedule retry: %w", err)
	}
	f.retries.wakePart(f.layout.PartitionOf(host)) // this process's Run learns when it is due
	return nil
}

// scheduleScript adds a request to the delayed set, due a wait from now on the Redis
// clock.
//
// KEYS[1] -> sc:{c}:delayed
// ARGV[1] -> wait (ms), ARGV[2] -> member ("\2<host>\1<band>\1<rule>\1<payload>")
// Output: 1 when the member is new
var scheduleScript = redis.NewScript(rkit.LuaNow + `
return redis.call('ZADD', KEYS[1], now_ms() + tonumber(ARGV[1]), ARGV[2])
`)

// moveDueScript moves due members of the delayed set back to their hosts' queues.
// A member written by a version before limit rules travelled with it
// ("\1<host>\1<band>\1<payload>") goes back with the defaults, and one without a host
// (before host queues) straight to the requests stream, as it did then.
//
// KEYS[1..9], ARGV[1..10] -> schedKeys, schedArgs (see hostSchedLua)
// KEYS[10] -> sc:{c}:delayed
// ARGV[11] -> max to move
// Output: number moved
var moveDueScript = schedScript("", `
local due = redis.call('ZRANGEBYSCORE', KEYS[10], '-inf', now_ms(), 'LIMIT', 0, tonumber(ARGV[11]))
if #due == 0 then return 0 end
redis.call('ZREM', KEYS[10], unpack(due))
for _, m in ipairs(due) do
  local host, band, rule_arg, payload = string.match(m, '^\2([^\1]*)\1(-?%d+)\1([^\1]*)\1(.*)$')
  if not host then
    host, band, payload = string.match(m, '^\1([^\1]*)\1(-?%d+)\1(.*)$')
    rule_arg = ''
  end
  if host then
    requeue(host, tonumber(band), rule_arg, payload)
  else
    xadd_msg(S.stream, S.idp .. 'r' .. seq_next(), m)
  end
end
commit()
return #due
`)

// moveDue moves up to max due requests of partition part back to their host queues
// and returns how many.
func (f *Frontier) moveDue(ctx context.Context, part, max int) (int, error) {
	k := f.layout.Parts[part]
	args := schedArgs(f.hosts, partIDPrefix(part), 0, false, f.order.sign(), max)
	n, err := moveDueScript.Run(ctx, f.rdb, schedKeys(k, k.Delayed), args...).Int()
	if err != nil {
		return 0, fmt.Errorf("frontier: move due requests: %w", err)
	}
	return n, nil
}

// moveAllDue moves every due request of the partitions Run looks at this round (see
// duePace), 100 at a time. A partition whose earliest retry is not due within a
// RetryInterval is looked at again a RetryInterval before it is, at the latest after
// dueSweep; one where requests were moved, or the move failed, at the next round.
func (f *Frontier) moveAllDue(ctx context.Context) error {
	var errs []error
	due := f.retries.due(ctx, f.rdb, f.layout, f.now(), true, func(k streams.Keys) string { return k.Delayed },
		func(score float64) time.Time { return time.UnixMilli(int64(score)) }, f.cfg.RetryInterval)
	for _, part := range due {
		for {
			n, err := f.moveDue(ctx, part, 100)
			if err != nil {
				errs = append(errs, err)
				break
			}
			if n > 0 {
				f.wakePart(part) // hosts made ready: the dispatcher looks there
			}
			if n < 100 {
				break
			}
		}
	}
	return errors.Join(errs...)
}
