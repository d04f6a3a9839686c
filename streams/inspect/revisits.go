package inspect

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"
)

// RevisitCounts is the state of a crawl's revisit schedule (settings.revisit.rules).
type RevisitCounts struct {
	// Scheduled is the number of revisits waiting in the schedule.
	Scheduled int64 `json:"scheduled"`
	// DueNow is the number due now or before (not yet released into host queues).
	DueNow int64 `json:"due_now"`
	// NextHour is the number due within the next hour (after now).
	NextHour int64 `json:"next_hour"`
	// Overdue is the number due more than a minute ago and still not released (no
	// fetch process is running, or they cannot keep up). Part of DueNow.
	Overdue int64 `json:"overdue"`
}

// maxRevisitBuckets bounds the buckets revisitCountsScript looks at: the hour ahead
// (61) and up to a day of overdue minutes. Revisits overdue by more than a day beyond
// those are counted in Scheduled only.
const maxRevisitBuckets = 61 + 1440

// revisitCountsScript counts one partition's revisits by when they are due: the
// counter, then LLEN of each bucket due before the next hour ends (oldest first, at
// most ARGV[2]); one round trip, O(minutes looked at), not O(URLs).
//
// KEYS[1] -> sc:{c}:counts, KEYS[2] -> sc:{c}:rv, KEYS[3] -> sc:{c}:rv: (the prefix of the buckets)
// ARGV[1] -> clock shift (ms; 0 but in tests), ARGV[2] -> max buckets
// Output: {scheduled, due now, next hour, overdue}
var revisitCountsScript = redis.NewScript(rkit.LuaNow + `
local now = math.floor((now_ms() + tonumber(ARGV[1])) / 60000)
local out = {tonumber(redis.call('HGET', KEYS[1], 'revisits') or '0'), 0, 0, 0}
local mins = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now + 60, 'LIMIT', 0, tonumber(ARGV[2]))
for _, m in ipairs(mins) do
  local n = redis.call('LLEN', KEYS[3] .. m)
  local minute = tonumber(m)
  if minute <= now then
    out[2] = out[2] + n
    if minute < now - 1 then out[4] = out[4] + n end
  else
    out[3] = out[3] + n
  end
end
return out
`)

// ReadRevisits reads the revisit schedule of every partition of the crawl on the Redis
// clock moved by shift (0 but in tests that simulate days): per partition one script
// call that reads the counter, the bucket minutes due by the end of the next hour and
// their lengths (at most 61 buckets, plus the overdue ones, up to a day of them).
func ReadRevisits(ctx context.Context, rdb redis.UniversalClient, l streams.Layout, shift int64) (RevisitCounts, error) {
	var out RevisitCounts
	for _, k := range l.Parts {
		r, err := rkit.RunRO(ctx, rdb, revisitCountsScript, []string{k.Counts, k.Revisits, k.Revisits + ":"}, shift, maxRevisitBuckets).Int64Slice()
		if err != nil {
			return out, fmt.Errorf("inspect: revisits: %w", err)
		}
		if len(r) != 4 {
			return out, fmt.Errorf("inspect: revisits: %d replies", len(r))
		}
		out.Scheduled += r[0]
		out.DueNow += r[1]
		out.NextHour += r[2]
		out.Overdue += r[3]
	}
	return out, nil
}
