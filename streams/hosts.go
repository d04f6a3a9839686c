package streams

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Hosts enforces per-host politeness across every fetch process of a crawl: at most C
// requests in flight to a host and at least D between the starts of two requests. State
// lives in Redis (a ZSET of leases per host, a hash of next allowed start times), timed by
// the Redis server's clock, so N fetchers are as polite as one. A fetcher that may not
// fetch now gets the wait instead of blocking; it parks the request in the delayed set.
type Hosts struct {
	rdb    redis.UniversalClient
	layout Layout
	b      *batcher
}

// NewHosts returns the politeness state of the crawl (each host's in its partition).
func NewHosts(rdb redis.UniversalClient, layout Layout) (*Hosts, error) {
	if rdb == nil {
		return nil, errors.New("streams: hosts needs a redis client")
	}
	return &Hosts{rdb: rdb, layout: layout, b: newBatcher(rdb, 64, DefaultPublishTimeout, DefaultPublishLinger)}, nil
}

// HostRule is the politeness of one host.
type HostRule struct {
	// Concurrency is the most requests in flight; 0 means no limit (and no lease).
	Concurrency int
	// Delay is the least time between the starts of two requests.
	Delay time.Duration
	// LeaseTTL bounds how long a slot stays taken if its fetcher dies without releasing
	// it; set it above the download timeout.
	LeaseTTL time.Duration
}

// acquireScript takes a slot for a host, or says how long to wait.
//
// KEYS[1] -> sc:{c}:host:<host> (ZSET lease -> expiry ms)
// KEYS[2] -> sc:{c}:hosts (HASH <host> -> next start ms, <host>:w -> requests waiting)
// ARGV[1] -> host, ARGV[2] -> lease id, ARGV[3] -> concurrency (0 = any),
// ARGV[4] -> delay ms, ARGV[5] -> lease ttl ms
// Output: 0 when granted; else the milliseconds to wait before asking again
var acquireScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local delay, conc, ttl = tonumber(ARGV[4]), tonumber(ARGV[3]), tonumber(ARGV[5])
local waitkey = ARGV[1] .. ':w'
local st = redis.call('HMGET', KEYS[2], ARGV[1], waitkey)
local nextstart, waiting = tonumber(st[1] or '0'), tonumber(st[2] or '0')
local busy = false
if conc > 0 then
  local n = redis.call('ZCARD', KEYS[1])
  if n >= conc then
    -- Full: drop leases whose fetcher died before counting again.
    redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
    busy = redis.call('ZCARD', KEYS[1]) >= conc
  end
end
if now < nextstart or busy then
  -- Spread the waiting requests over the coming slots instead of waking them together.
  waiting = redis.call('HINCRBY', KEYS[2], waitkey, 1)
  local wait = math.max(nextstart - now, 0) + (waiting - 1) * math.max(delay, 20)
  if busy then wait = wait + math.max(delay, 50) end
  return math.min(wait, 600000)
end
if waiting > 0 then redis.call('HINCRBY', KEYS[2], waitkey, -1) end
if conc > 0 then
  if redis.call('ZADD', KEYS[1], now + ttl, ARGV[2]) == 1 and redis.call('PTTL', KEYS[1]) < ttl then
    redis.call('PEXPIRE', KEYS[1], ttl * 2)
  end
end
if delay > 0 then redis.call('HSET', KEYS[2], ARGV[1], now + delay) end
return 0
`)

// Acquire takes a slot of host for lease, or returns how long to wait before asking
// again (0 when granted).
func (h *Hosts) Acquire(ctx context.Context, host, lease string, r HostRule) (time.Duration, error) {
	ttl := max(r.LeaseTTL, time.Second)
	k := h.layout.ForHost(host)
	keys := []string{k.Host(host), k.Hosts()}
	cmd, err := h.b.do(ctx, func(ctx context.Context, p redis.Pipeliner) redis.Cmder {
		return acquireScript.EvalSha(ctx, p, keys, host, lease, r.Concurrency, r.Delay.Milliseconds(), ttl.Milliseconds())
	})
	if isNoScript(err) {
		cmd = acquireScript.Run(ctx, h.rdb, keys, host, lease, r.Concurrency, r.Delay.Milliseconds(), ttl.Milliseconds())
		err = cmd.Err()
	}
	if err != nil {
		return 0, fmt.Errorf("streams: acquire host %s: %w", host, err)
	}
	ms, err := cmd.(*redis.Cmd).Int64()
	if err != nil {
		return 0, fmt.Errorf("streams: acquire host %s: %w", host, err)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// Release frees the slot of lease (a no-op for a rule without a concurrency limit).
func (h *Hosts) Release(ctx context.Context, host, lease string, r HostRule) error {
	if r.Concurrency <= 0 {
		return nil
	}
	_, err := h.b.do(ctx, func(ctx context.Context, p redis.Pipeliner) redis.Cmder {
		return p.ZRem(ctx, h.layout.ForHost(host).Host(host), lease)
	})
	if err != nil {
		return fmt.Errorf("streams: release host %s: %w", host, err)
	}
	return nil
}

// Close stops the batcher.
func (h *Hosts) Close() { h.b.close() }
