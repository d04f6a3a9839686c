package hostgate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
)

// DefaultKeep is how long a crawl's rule constrains a host after the crawl last asked
// with it (Config.Keep).
const DefaultKeep = 5 * time.Minute

// Poll is the wait of a refused ask at a host without a delay whose slots are taken:
// when one comes free is not known (a holder's release), so the ask comes again.
const Poll = 50 * time.Millisecond

// Rule is one crawl's politeness for a host, as the crawl's frontier applies it.
type Rule struct {
	// Delay is the least time between two requests to the host (see package doc).
	Delay time.Duration
	// Concurrency is the most requests in flight to the host; 0: no limit.
	Concurrency int
}

// Config configures a Gate.
type Config struct {
	// Keep is how long a rule constrains a host after it was last asked with.
	// Default DefaultKeep.
	Keep time.Duration
}

// Gate is the fleet-wide politeness gate of every host, in one Redis. A Gate is safe
// for concurrent use.
type Gate struct {
	rdb  redis.UniversalClient
	keep time.Duration
}

// New returns the gate in rdb.
func New(rdb redis.UniversalClient, cfg Config) (*Gate, error) {
	if rdb == nil {
		return nil, errors.New("hostgate: a gate needs a redis client")
	}
	if cfg.Keep < 0 {
		return nil, fmt.Errorf("hostgate: keep %s is negative", cfg.Keep)
	}
	if cfg.Keep == 0 {
		cfg.Keep = DefaultKeep
	}
	return &Gate{rdb: rdb, keep: cfg.Keep}, nil
}

// acquireScript asks for a start at a host.
//
//	KEYS[1] -> the host's gate (streams.HostGate): a hash of
//	           n   the host's next start (ms, Redis clock)
//	           d, du  the strictest delay (ms) asked for, and until when it holds
//	           c, cu  the strictest concurrency (0: none), and until when it holds
//	           t:<token>  a slot held, to when its lease ends (ms)
//	           x   when the key's expiry was last set (ms)
//	ARGV[1] -> token
//	ARGV[2] -> the caller's delay (ms)
//	ARGV[3] -> the caller's concurrency (0: no limit)
//	ARGV[4] -> lease (ms)
//	ARGV[5] -> keep (ms): how long a rule holds after it was asked with
//	ARGV[6] -> Poll (ms)
//
// Output: 0 when the slot is granted (held under token until release or the lease's
// end), else the ms to wait before asking again.
//
// A rule is written only when it is stricter or as strict as the one held, or the one
// held expired, and then only when half its keep has passed, so the asks of a crawl
// that keeps its rule cost no write until granted.
var acquireScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local token, delay, conc = 't:' .. ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local lease, keep, poll = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local raw = redis.call('HGETALL', KEYS[1])
local f = {}
for i = 1, #raw, 2 do f[raw[i]] = raw[i + 1] end
local n = tonumber(f.n or 0)
local d, du = tonumber(f.d or 0), tonumber(f.du or 0)
local c, cu = tonumber(f.c or 0), tonumber(f.cu or 0)
local set, gone = {}, {}
if du <= now or delay >= d then
  if delay ~= d or du - now < keep / 2 then
    d, du = delay, now + keep
    set[#set + 1], set[#set + 2], set[#set + 3], set[#set + 4] = 'd', d, 'du', du
  end
end
-- 0 is no limit: any limit is stricter.
if cu <= now or (conc > 0 and (c == 0 or conc <= c)) or (conc == 0 and c == 0) then
  if conc ~= c or cu - now < keep / 2 then
    c, cu = conc, now + keep
    set[#set + 1], set[#set + 2], set[#set + 3], set[#set + 4] = 'c', c, 'cu', cu
  end
end
local held, soonest = 0, nil
for k, v in pairs(f) do
  if string.sub(k, 1, 2) == 't:' then
    local ends = tonumber(v)
    if ends <= now then
      gone[#gone + 1] = k
    elseif k ~= token then
      held = held + 1
      if soonest == nil or ends < soonest then soonest = ends end
    end
  end
end
local limit = c
if c > 0 and d > 0 then limit = 1 end
local wait = 0
if limit > 0 and held >= limit then
  -- Taken. One at a time (a delay): no start before the holder ends and its delay
  -- passes, so not before now + d unless its lease ends first; else poll.
  if d > 0 then wait = d else wait = poll end
  wait = math.max(math.min(wait, soonest - now), n - now, 1)
elseif n > now then
  wait = n - now
else
  set[#set + 1], set[#set + 2] = token, now + lease
  if d > 0 then set[#set + 1], set[#set + 2] = 'n', now + d end
end
if #gone > 0 then redis.call('HDEL', KEYS[1], unpack(gone)) end
if #set > 0 then
  -- The key lives ttl past the last write; its expiry is set again (x: when) only once
  -- half of it has passed, so a busy host's asks do not pay a PEXPIRE each.
  local ttl = math.max(keep, lease, d) + 1000
  local x = tonumber(f.x or 0)
  if now - x >= ttl / 2 then set[#set + 1], set[#set + 2] = 'x', now end
  redis.call('HSET', KEYS[1], unpack(set))
  if now - x >= ttl / 2 then redis.call('PEXPIRE', KEYS[1], math.floor(ttl * 3 / 2)) end
end
return wait
`)

// Acquire asks for a start at host under r, for token, a name unique to the request
// (its slot is held under it). It returns 0 when the request may start now (the slot
// is held until Release with token, or until lease has passed), else how long to wait
// before asking again.
func (g *Gate) Acquire(ctx context.Context, host string, r Rule, token string, lease time.Duration) (time.Duration, error) {
	ms, err := acquireScript.Run(ctx, g.rdb, []string{streams.HostGate(host)}, token, max(r.Delay.Milliseconds(), 0),
		max(r.Concurrency, 0), max(lease.Milliseconds(), 1), g.keep.Milliseconds(), Poll.Milliseconds()).Int64()
	if err != nil {
		return 0, fmt.Errorf("hostgate: acquire %s: %w", host, err)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// releaseScript gives a slot back.
//
//	KEYS[1] -> the host's gate (see acquireScript)
//	ARGV[1] -> token
//	ARGV[2] -> back-off (ms): the host asked to wait that long (0: it did not)
//
// Output: 1 when the slot was still held, 0 when its lease had ended.
//
// A host with a delay and a limit may start its next request its delay after this one
// ended, even when the lease had ended: a request did just end there.
var releaseScript = redis.NewScript(`
local held = redis.call('HDEL', KEYS[1], 't:' .. ARGV[1])
local v = redis.call('HMGET', KEYS[1], 'n', 'd', 'du', 'c', 'cu')
local backoff = tonumber(ARGV[2])
if v[2] == false or backoff == 0 and (tonumber(v[2]) == 0 or tonumber(v[4]) == 0) then return held end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local n, d, c = tonumber(v[1] or 0), 0, 0
if tonumber(v[3]) > now then d = tonumber(v[2]) end
if tonumber(v[5]) > now then c = tonumber(v[4]) end
local want = now + backoff
if d > 0 and c > 0 then want = math.max(want, now + d) end
if want > n then redis.call('HSET', KEYS[1], 'n', want) end
return held
`)

// MaxBackoff bounds the back-off one answer sets at a host (Release).
const MaxBackoff = 10 * time.Minute

// Release gives the slot held under token at host back: the host's next request may
// start its delay from now, and not before backoff (the answer's Retry-After, at most
// MaxBackoff; 0: none) from now, whichever crawl sends it.
func (g *Gate) Release(ctx context.Context, host, token string, backoff time.Duration) error {
	ms := min(max(backoff, 0), MaxBackoff).Milliseconds()
	if err := releaseScript.Run(ctx, g.rdb, []string{streams.HostGate(host)}, token, ms).Err(); err != nil {
		return fmt.Errorf("hostgate: release %s: %w", host, err)
	}
	return nil
}
