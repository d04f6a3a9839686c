package frontier

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"
)

// The revisit schedule: per partition, the requests to fetch again wait in minute
// buckets, one LIST per minute (streams.Keys.Revisits + ":" + minute) holding compact entries
// "<host>\1<band>\1<rule>\1<payload>", and a small ZSET (streams.Keys.Revisits) of the
// minutes that have a bucket. A bucket of up to 128 entries is a listpack (a few bytes
// per entry beside the entry itself), and a bigger one a quicklist of listpacks, so a
// scheduled URL costs its encoded request and about 2 B, against ~100 B for a ZSET
// member past the listpack limit. The interval state (the current interval, the last
// content digest) travels in the request's payload, which the caller encodes: the
// schedule keeps the payload as it is.
//
// Every move is one Lua script: ScheduleRevisit adds an entry and counts it; the
// release takes the due entries of the oldest due buckets and puts them in their hosts'
// queues (under the same politeness as any request) in the same script, so a kill -9
// at any point loses none and doubles none. The partition's counters hash keeps
// "revisits" (scheduled, not yet released) as the scripts run.

// RevisitChain names the chain of revisits a ScheduleRevisit call belongs to, so that a
// URL has one chain however often it is fetched: a URL let through dedup again
// (settings.revisit.after) or seeded again while its chain is scheduled does not start
// a second chain that would keep rescheduling beside the first. Per URL, the schedule
// keeps the mark of the fetch that scheduled its next revisit and that revisit's
// minute, in small hashes (streams.Keys.RevisitChains, about revisitChainsPerHash URLs
// each at Config.RevisitURLs, so Redis keeps them as listpacks): field 6 bytes of the
// URL's fingerprint, value the integer mark<<16 | (minute mod 65536), which Redis keeps
// in 4 bytes (about 17 B a URL in all). A mark collision costs at most one extra fetch:
// of two revisits of one chain, the second to be fetched ends there.
type RevisitChain struct {
	// URL is the URL's fingerprint (at least 10 bytes); nil schedules with no chain
	// guard at all.
	URL []byte
	// Gen marks this fetch, 1 to MaxRevisitGen (derived from its message's UUID): the
	// scheduled request carries it, and a second call with the same Gen and Prev does
	// nothing, so a fetch redelivered after its worker died does not schedule the URL
	// twice.
	Gen uint32
	// Prev is the Gen the fetched request carried (the fetch that scheduled this one);
	// 0 for a fetch no revisit scheduled (a seed, a link, a URL let through dedup
	// again).
	Prev uint32
}

// MaxRevisitGen is the largest RevisitChain.Gen (15 bits).
const MaxRevisitGen = 1<<15 - 1

// RevisitOutcome is what ScheduleRevisit did.
type RevisitOutcome int

const (
	// RevisitScheduled: the revisit was scheduled.
	RevisitScheduled RevisitOutcome = 1
	// RevisitRepeated: this fetch (its Gen) had scheduled it already; nothing done.
	RevisitRepeated RevisitOutcome = 0
	// RevisitOtherChain: the URL's revisits are another chain's (a fetch outside the
	// chain while it is scheduled, or a chain another one took over); nothing done.
	RevisitOtherChain RevisitOutcome = 2
)

// revisitChainGrace is how long past its due minute a URL's scheduled revisit keeps
// its chain from a fetch outside it: a chain whose revisit was released that long ago
// without being fetched (its request dropped or dead-lettered) is taken over by the
// next fetch of the URL, and a late revisit of the old chain then ends it.
const revisitChainGrace = 24 * time.Hour

// revisitChainsPerHash is how many URLs a revisit-chains hash holds at Config.RevisitURLs
// (under Redis's listpack limit of 128 fields).
const revisitChainsPerHash = 64

// ScheduleRevisit schedules an encoded request for host, of the given priority and
// depth, to go back to its host's queue after after (counted on the Redis clock, due in
// the minute that time falls in), as a link of chain (see RevisitChain).
func (f *Frontier) ScheduleRevisit(ctx context.Context, host string, priority, depth int, payload []byte, after time.Duration, chain RevisitChain) (RevisitOutcome, error) {
	k := f.layout.ForHost(host)
	_, rule := f.ruleOf(host)
	member := host + "\x01" + strconv.Itoa(f.order.band(priority, depth)) + "\x01" + rule + "\x01" + string(payload)
	keys := []string{k.Counts, k.Revisits, k.Revisits + ":"}
	field := ""
	if len(chain.URL) >= 10 {
		keys = append(keys, k.RevisitChains(binary.BigEndian.Uint32(chain.URL[:4])%f.chainHashes()))
		field = string(chain.URL[4:10])
	}
	n, err := scheduleRevisitScript.Run(ctx, f.rdb, keys, max(after.Milliseconds(), 0), member,
		f.revisitShift.Milliseconds(), field, chain.Gen&MaxRevisitGen, chain.Prev&MaxRevisitGen, int64(revisitChainGrace/time.Minute)).Int()
	if err != nil {
		return 0, fmt.Errorf("frontier: schedule revisit: %w", err)
	}
	f.revisits.wakePart(f.layout.PartitionOf(host)) // this process's Run learns when it is due
	return RevisitOutcome(n), nil
}

// chainHashes is the number of revisit-chains hashes of a partition.
func (f *Frontier) chainHashes() uint32 {
	return uint32(min(max(f.cfg.RevisitURLs/revisitChainsPerHash, 1), 1<<24))
}

// scheduleRevisitScript adds a request to the bucket of the minute it is due in, unless
// its URL's chain says otherwise (RevisitChain). The chain is checked on Prev first: the
// next fetch of a chain continues it whatever its own mark.
//
// KEYS[1] -> sc:{c}:counts
// KEYS[2] -> sc:{c}:rv (the bucket minutes)
// KEYS[3] -> sc:{c}:rv: (the prefix of the buckets)
// KEYS[4] -> sc:{c}:rvc:<hash> (absent: no chain guard)
// ARGV[1] -> after (ms), ARGV[2] -> member, ARGV[3] -> test clock shift (ms, 0 in production),
// ARGV[4] -> the URL's field, ARGV[5] -> gen, ARGV[6] -> prev gen (0: none), ARGV[7] -> grace (minutes)
// Output: 1 scheduled, 0 this fetch had scheduled it, 2 the URL's revisits are another chain's
var scheduleRevisitScript = redis.NewScript(rkit.LuaNow + `
local now_min = math.floor((now_ms() + tonumber(ARGV[3])) / 60000)
local minute = math.floor((now_ms() + tonumber(ARGV[3]) + tonumber(ARGV[1])) / 60000)
if KEYS[4] then
  local cur = tonumber(redis.call('HGET', KEYS[4], ARGV[4]) or '')
  local gen, prev = tonumber(ARGV[5]), tonumber(ARGV[6])
  if cur then
    local cur_gen = math.floor(cur / 65536)
    -- minutes since the revisit was due, modulo 65536: past the grace and less than
    -- half the circle (22 days) back, its chain is dead; else it is alive
    local age = (now_min - cur) % 65536
    if cur_gen ~= prev then
      if cur_gen == gen then return 0 end
      if prev ~= 0 or age <= tonumber(ARGV[7]) or age >= 32768 then return 2 end
    end
  end
  redis.call('HSET', KEYS[4], ARGV[4], gen * 65536 + minute % 65536)
end
redis.call('RPUSH', KEYS[3] .. minute, ARGV[2])
redis.call('ZADD', KEYS[2], minute, minute)
redis.call('HINCRBY', KEYS[1], 'revisits', 1)
return 1
`)

// releaseRevisitsScript puts the entries of due buckets, oldest first, in their hosts'
// queues; an emptied bucket leaves the bucket set.
//
// KEYS[1..9], ARGV[1..10] -> schedKeys, schedArgs (see hostSchedLua)
// KEYS[10] -> sc:{c}:rv, KEYS[11] -> sc:{c}:rv: (the prefix of the buckets)
// ARGV[11] -> max to release, ARGV[12] -> test clock shift (ms, 0 in production)
// Output: number released
var releaseRevisitsScript = schedScript("", `
local now_min = math.floor((now_ms() + tonumber(ARGV[12])) / 60000)
local left = tonumber(ARGV[11])
local moved = 0
for _, b in ipairs(redis.call('ZRANGEBYSCORE', KEYS[10], '-inf', now_min, 'LIMIT', 0, 64)) do
  if left <= 0 then break end
  local key = KEYS[11] .. b
  local es = redis.call('LPOP', key, left)
  if es then
    for _, m in ipairs(es) do
      local host, band, rule_arg, payload = string.match(m, '^([^\1]*)\1(-?%d+)\1([^\1]*)\1(.*)$')
      if host then requeue(host, tonumber(band), rule_arg, payload) end
    end
    moved = moved + #es
    left = left - #es
  end
  if redis.call('EXISTS', key) == 0 then redis.call('ZREM', KEYS[10], b) end
end
if moved > 0 then count('revisits', -moved) end
commit()
return moved
`)

// releaseDue releases up to max due revisits of partition part into their hosts'
// queues and returns how many.
func (f *Frontier) releaseDue(ctx context.Context, part, max int) (int, error) {
	k := f.layout.Parts[part]
	args := schedArgs(f.hosts, partIDPrefix(part), 0, false, f.order.sign(), max, f.revisitShift.Milliseconds())
	n, err := releaseRevisitsScript.Run(ctx, f.rdb, schedKeys(k, k.Revisits, k.Revisits+":"), args...).Int()
	if err != nil {
		return 0, fmt.Errorf("frontier: release revisits: %w", err)
	}
	return n, nil
}

// ReleaseRevisits releases every due revisit of every partition into its host's queue
// now, 500 per script call; partitions whose oldest bucket is not due cost one
// pipelined read of it between them.
func (f *Frontier) ReleaseRevisits(ctx context.Context) error {
	return f.releaseRevisits(ctx, false)
}

// releaseRevisits releases the due revisits of every partition (paced false) or of
// those Run looks at this round (see duePace): a partition whose oldest bucket is not
// due is looked at again a RetryInterval before it is, at the latest after dueSweep.
func (f *Frontier) releaseRevisits(ctx context.Context, paced bool) error {
	var errs []error
	due := f.revisits.due(ctx, f.rdb, f.layout, f.now(), paced, func(k streams.Keys) string { return k.Revisits },
		func(minute float64) time.Time { return time.UnixMilli(int64(minute) * 60000).Add(-f.revisitShift) }, f.cfg.RetryInterval)
	for _, part := range due {
		for {
			n, err := f.releaseDue(ctx, part, 500)
			if err != nil {
				errs = append(errs, err)
			}
			if err != nil || n < 500 {
				break
			}
		}
	}
	return errors.Join(errs...)
}
