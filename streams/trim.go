package streams

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"
	"github.com/streamcrawl/streamcrawl/streams/loop"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// DefaultTrimInterval is how often a Trimmer trims every stream.
const DefaultTrimInterval = time.Second

const (
	// bytesTrimChunk is how many of the oldest acked entries one script removes for a
	// byte limit (one short script each, so Redis never stalls).
	bytesTrimChunk = 256
	// bytesRetentionMinInterval is how often streams with a byte limit are trimmed at
	// least.
	bytesRetentionMinInterval = 250 * time.Millisecond
)

// trimScript trims a stream below what every consumer group has acked and below its
// retention, with XTRIM MINID (never a blind MAXLEN).
//
// KEYS[1] -> stream
// ARGV[1] -> retention age (ms, 0 = none), ARGV[2] -> now (Unix ms),
// ARGV[3] -> retention count (0 = none), ARGV[4] -> oldest entries to drop for the byte
// limit (-1: no byte limit)
// Output: {entries removed, the MINID used or an empty string}
var trimScript = redis.NewScript(rkit.LuaIDs + rkit.LuaGroups + `
local groups = groups_of(KEYS[1])
if groups == nil or #groups == 0 then return {0, ''} end
local minid = nil
for _, f in ipairs(groups) do
  local keep
  if tonumber(f['pending']) > 0 then
    keep = redis.call('XPENDING', KEYS[1], f['name'])[2]
  else
    keep = id_after(f['last-delivered-id'])
  end
  if minid == nil or id_less(keep, minid) then minid = keep end
end
-- cut: entries below it are past retention (nil: nothing is retained)
local cut = nil
local age = tonumber(ARGV[1])
if age > 0 then cut = string.format('%d-0', tonumber(ARGV[2]) - age) end
local drop = tonumber(ARGV[4])
if drop >= 0 then
  local bcut = '0-0'
  if drop > 0 then
    local r = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', drop + 1)
    if #r == drop + 1 then bcut = r[drop + 1][1] elseif #r > 0 then bcut = id_after(r[#r][1]) end
  end
  if cut == nil or id_less(cut, bcut) then cut = bcut end
end
local count = tonumber(ARGV[3])
if count > 0 then
  local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', count)
  if #last < count then return {0, ''} end
  if cut == nil or id_less(last[count][1], cut) then cut = last[count][1] end
end
if cut ~= nil and id_less(cut, minid) then minid = cut end
return {redis.call('XTRIM', KEYS[1], 'MINID', minid), minid}
`)

// trim removes the entries of stream that every group has acked and that are past
// retention. It returns how many it removed. A byte limit is then enforced (trimBytes).
func trim(ctx context.Context, rdb redis.UniversalClient, stream string, r spiders.StreamRetention, now time.Time) (int64, error) {
	total, err := trimChunk(ctx, rdb, stream, r, now, -1)
	if err != nil || r.MaxBytes <= 0 {
		return total, err
	}
	n, err := trimBytes(ctx, rdb, stream, r, now)
	return total + n, err
}

// trimBytes enforces stream's byte limit: from the stream's MEMORY USAGE and its mean
// entry size it removes the oldest acked entries in chunks of bytesTrimChunk (one short
// script each, so Redis never stalls) until the stream fits. A server without MEMORY
// USAGE (the embedded one) keeps everything the age allows. A stream under its limit
// costs one pipelined MEMORY USAGE and XLEN, no script: the Trimmer's byte ticks between
// its full passes (see Run) run only this.
func trimBytes(ctx context.Context, rdb redis.UniversalClient, stream string, r spiders.StreamRetention, now time.Time) (int64, error) {
	var total int64
	// The mean entry size carries the stream's fixed overhead, so one estimate can stop
	// short of the limit: measure again, a few times at most.
	for round := 0; round < 4; round++ {
		drop, err := overBytes(ctx, rdb, stream, int64(r.MaxBytes))
		if err != nil || drop == 0 {
			return total, nil // no MEMORY USAGE (embedded Redis): the age alone decides
		}
		for drop > 0 {
			chunk := min(drop, bytesTrimChunk)
			n, err := trimChunk(ctx, rdb, stream, r, now, chunk)
			total += n
			if err != nil {
				return total, err
			}
			if n < chunk {
				return total, nil // a group has not acked the rest
			}
			drop -= n
		}
	}
	return total, nil
}

// trimChunk runs trimScript once; drop is the number of oldest entries the byte limit
// removes (-1: no byte limit in this call, 0: the byte limit keeps everything).
func trimChunk(ctx context.Context, rdb redis.UniversalClient, stream string, r spiders.StreamRetention, now time.Time, drop int64) (int64, error) {
	if drop < 0 && r.MaxBytes > 0 {
		drop = 0
	}
	res, err := trimScript.Run(ctx, rdb, []string{stream},
		r.MaxAge.Milliseconds(), strconv.FormatInt(now.UnixMilli(), 10), r.MinCount, drop).Slice()
	if err != nil {
		return 0, fmt.Errorf("streams: trim %s: %w", stream, err)
	}
	n, _ := res[0].(int64)
	return n, nil
}

// memorySamples is how many of a stream's nodes MEMORY USAGE reads to estimate its
// bytes (the oldest ones; Redis scales their mean to the rest). All of them (SAMPLES 0)
// cost ~0.9 ms a call on the items stream at its 16 MiB default, four times a second:
// ~3 µs of Redis CPU per page of a broad crawl; a bounded sample costs the same at any
// length.
const memorySamples = 128

// overBytes returns how many of the oldest entries of stream must go for its memory to
// fit max, by its mean entry size. A stream over max is trimmed to 95% of it, so that
// the entries added before the next pass do not take it past max again at once.
func overBytes(ctx context.Context, rdb redis.UniversalClient, stream string, max int64) (int64, error) {
	pipe := rdb.Pipeline()
	usage := pipe.MemoryUsage(ctx, stream, memorySamples)
	length := pipe.XLen(ctx, stream)
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, err
	}
	used, n := usage.Val(), length.Val()
	if used <= max || n == 0 {
		return 0, nil
	}
	per := float64(used) / float64(n)
	target := float64(max) * 0.95
	return min(n, int64(math.Ceil((float64(used)-target)/per))), nil
}

// Trimmer trims streams to their retention, periodically (see Trim). Any number of
// processes may trim the same stream at once.
type Trimmer struct {
	// Client is the Redis client; Run does not close it.
	Client redis.UniversalClient
	// Streams are the streams to trim, with their retention.
	Streams map[string]spiders.StreamRetention
	// Interval is how often every stream is trimmed. Default DefaultTrimInterval.
	Interval time.Duration
	// Logger; nil means no-op.
	Logger *zap.Logger
	// Meta, when set, is the crawl's meta hash: Run first records there the retention
	// of each kind of stream it trims (requests, responses, items), which status shows
	// (the last process started says).
	Meta string
}

// Run trims every Interval until ctx ends; streams with a byte limit at least four times
// a second, so that they overshoot it by no more than a quarter second of inflow. A
// failed trim is logged (at most once a minute) and tried again. When ctx ends it trims
// every stream once more, within 5 s, and returns nil: a stage process stops its
// trimmer after its router, so its last acks are in and a finished crawl leaves no
// acked entry past retention.
func (tr *Trimmer) Run(ctx context.Context) error {
	log := cmp.Or(tr.Logger, zap.NewNop())
	interval := tr.Interval
	if interval <= 0 {
		interval = DefaultTrimInterval
	}
	errLog := loop.NewErrors(log, time.Minute)
	tick := interval
	for _, r := range tr.Streams {
		if r.MaxBytes > 0 {
			tick = min(tick, bytesRetentionMinInterval)
		}
	}
	if err := tr.record(ctx); err != nil {
		log.Debug("retention not recorded for status", zap.Error(err))
	}
	var last time.Time
	err := loop.Every(ctx, tick, loop.Config{}, func(ctx context.Context) error {
		all := time.Since(last) >= interval-tick/2
		if all {
			last = time.Now()
		}
		trimAll(ctx, tr.Client, tr.Streams, !all, errLog, log)
		return nil
	})
	final, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	trimAll(final, tr.Client, tr.Streams, false, errLog, log)
	return err
}

// trimAll trims streams; when bytesOnly, it only enforces the byte limits of those that
// have one (trimBytes: the age and the acks are the full passes' work).
func trimAll(ctx context.Context, rdb redis.UniversalClient, streams map[string]spiders.StreamRetention, bytesOnly bool, errLog *loop.Errors, log *zap.Logger) {
	for stream, r := range streams {
		if bytesOnly && r.MaxBytes == 0 {
			continue
		}
		do := trim
		if bytesOnly {
			do = trimBytes
		}
		n, err := do(ctx, rdb, stream, r, time.Now())
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

// record records, in Meta, the retention each kind of stream of Streams is trimmed with.
func (tr *Trimmer) record(ctx context.Context) error {
	if tr.Meta == "" || len(tr.Streams) == 0 {
		return nil
	}
	vals := make([]any, 0, 2*len(tr.Streams))
	for stream, r := range tr.Streams {
		vals = append(vals, rkit.RetentionField(kindOf(stream)), r.String())
	}
	if err := tr.Client.HSet(ctx, tr.Meta, vals...).Err(); err != nil {
		return fmt.Errorf("streams: record retention: %w", err)
	}
	return nil
}
