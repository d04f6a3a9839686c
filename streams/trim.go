package streams

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// Default retention (how long acked entries stay, for replay) and trim interval.
const (
	DefaultRetainRequests  = 0
	DefaultRetainResponses = time.Hour
	DefaultRetainItems     = 24 * time.Hour
	DefaultTrimInterval    = 10 * time.Second
)

// Retention says how much of a stream to keep after every group has acked it: entries
// younger than Age, and the last Count entries. Entries that some group has not acked
// are always kept, whatever the retention.
type Retention struct {
	Age   time.Duration
	Count int64
}

// trimScript trims a stream below what every consumer group has acked and below its
// retention, with XTRIM MINID (never a blind MAXLEN).
//
// KEYS[1] -> stream
// ARGV[1] -> retention age (ms, 0 = none), ARGV[2] -> now (Unix ms),
// ARGV[3] -> retention count (0 = none)
// Output: {entries removed, the MINID used or an empty string}
var trimScript = redis.NewScript(`
local function parse(id)
  local ms, seq = string.match(id, '(%d+)-(%d+)')
  return tonumber(ms), tonumber(seq)
end
local function less(a, b)
  local am, as = parse(a)
  local bm, bs = parse(b)
  return am < bm or (am == bm and as < bs)
end
if redis.call('EXISTS', KEYS[1]) == 0 then return {0, ''} end
local groups = redis.call('XINFO', 'GROUPS', KEYS[1])
if #groups == 0 then return {0, ''} end
local minid = nil
for _, g in ipairs(groups) do
  local f = {}
  for j = 1, #g, 2 do f[g[j]] = g[j + 1] end
  local keep
  if tonumber(f['pending']) > 0 then
    keep = redis.call('XPENDING', KEYS[1], f['name'])[2]
  else
    local ms, seq = parse(f['last-delivered-id'])
    keep = string.format('%d-%d', ms, seq + 1)
  end
  if minid == nil or less(keep, minid) then minid = keep end
end
local age = tonumber(ARGV[1])
if age > 0 then
  local rid = string.format('%d-0', tonumber(ARGV[2]) - age)
  if less(rid, minid) then minid = rid end
end
local count = tonumber(ARGV[3])
if count > 0 then
  local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', count)
  if #last == count and less(last[count][1], minid) then minid = last[count][1] end
  if #last < count then return {0, ''} end
end
return {redis.call('XTRIM', KEYS[1], 'MINID', minid), minid}
`)

// Trim removes the entries of stream that every group has acked and that are past
// retention. It returns how many it removed.
func Trim(ctx context.Context, rdb redis.UniversalClient, stream string, r Retention, now time.Time) (int64, error) {
	res, err := trimScript.Run(ctx, rdb, []string{stream},
		r.Age.Milliseconds(), strconv.FormatInt(now.UnixMilli(), 10), r.Count).Slice()
	if err != nil {
		return 0, fmt.Errorf("streams: trim %s: %w", stream, err)
	}
	n, _ := res[0].(int64)
	return n, nil
}

// RunTrimmer trims the given streams every interval until ctx ends. Any number of
// processes may trim the same stream at once.
func RunTrimmer(ctx context.Context, rdb redis.UniversalClient, streams map[string]Retention, interval time.Duration, log *zap.Logger) {
	if log == nil {
		log = zap.NewNop()
	}
	errLog := newRateLimited(log, time.Minute)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for stream, r := range streams {
			n, err := Trim(ctx, rdb, stream, r, time.Now())
			if err != nil {
				if ctx.Err() == nil {
					errLog.Warn("trim failed", err, zap.String("stream", stream))
				}
				continue
			}
			if n > 0 {
				log.Debug("trimmed acked entries", zap.String("stream", stream), zap.Int64("removed", n))
			}
		}
	}
}
