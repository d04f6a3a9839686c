package frontier

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"
)

// The fetchers' side of per-host politeness: the frontier hands a request of a host
// with a concurrency limit out with a lease on one of its slots, and the fetcher gives
// the slot back when the fetch is over (Finish), with what it learned of the host (how
// long it took, whether it asked to slow down). The scripts are in hostsched_lua.go and
// hosts_finish.go.

// HostRule is the politeness of one host.
type HostRule struct {
	// Concurrency is the most requests in flight; 0 means no limit (and no lease).
	Concurrency int
	// Delay is the least time between the starts of two requests.
	Delay time.Duration
}

// arg is the rule as the frontier's scripts store it.
func (r HostRule) arg() string {
	return strconv.Itoa(max(r.Concurrency, 0)) + " " + strconv.FormatInt(max(r.Delay.Milliseconds(), 0), 10)
}

// hostDefaults is the politeness of every host without a rule of its own, as the
// scripts take it (see schedArgs).
type hostDefaults struct {
	HostRule
	leaseTTL time.Duration
	quantum  int
}

// Finish says how a fetcher's turn at a host ended.
type Finish struct {
	// Host is the key of the request's host (spiders.HostKey).
	Host string
	// Lease is the requests stream ID of the request the slot was leased for; empty
	// when the host has no concurrency limit.
	Lease string
	// Owner, with Lease, is the fetch group's consumer that holds the request's entry:
	// the turn counts only while the entry is pending with it. A fetcher that was
	// paused or cut off while another took the entry over (and its slot with it) must
	// not give back a slot the other is using, nor requeue a request the other is
	// fetching: its finish is then a no-op. Empty: not checked.
	Owner string
	// Started is when the request to the host started (this machine's clock). Zero: no
	// request was made (robots.txt disallowed the URL, a check failed). A host that
	// answered lets a back-off decay.
	Started time.Time
	// Ended is when the request ended (its answer read); zero: when Finish is called.
	// The host's next start is its delay after it (Heritrix's politeness: counted from
	// the end of the previous request), reckoned on the Redis clock from the time
	// elapsed since, taken when the call leaves for Redis.
	Ended time.Time
	// CrawlDelay is the host's robots.txt Crawl-delay as the fetcher knows it: the delay
	// after Ended is the larger of it and the host's rule's.
	CrawlDelay time.Duration
	// SlowDown says the host answered 429 or 503: it is pushed back for every fetcher,
	// longer after each in a row, at least for its Retry-After.
	SlowDown bool
	// RetryAfter is the server's Retry-After with SlowDown (at most 10 minutes count).
	RetryAfter time.Duration
	// Autothrottle feeds the request's duration to the host's AutoThrottle latency
	// (shared by every fetcher), which raises its delay.
	Autothrottle bool
	// Requeue, when set, is a request (encoded) that goes back to the host's queue,
	// in the same step, not before Wait from now: a page whose turn robots.txt used.
	Requeue []byte
	// Priority and Depth of Requeue place it in its host's queue.
	Priority, Depth int
	// Wait is the least time before the host starts its next request.
	Wait time.Duration
}

// Finish ends a fetcher's turn at a host (see Finish) and returns when the host may
// start its next request (zero: now). Calls of many fetchers share one script call (see
// finishScript).
func (f *Frontier) Finish(ctx context.Context, fin Finish) (time.Time, error) {
	host := fin.Host
	fin.RetryAfter = min(fin.RetryAfter, maxHostBackoff)
	if fin.Ended.IsZero() {
		fin.Ended = time.Now()
	}
	j := &finishJob{part: f.layout.PartitionOf(host), host: host, f: fin}
	err := f.fin.Do(ctx, j)
	if err == nil {
		err = j.err
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("frontier: finish turn at host %s: %w", host, err)
	}
	if j.next == 0 {
		return time.Time{}, nil
	}
	return time.UnixMilli(j.next), nil
}

// SetCrawlDelay records host's robots.txt Crawl-delay, which raises its delay for every
// fetcher (0 removes it).
func (f *Frontier) SetCrawlDelay(ctx context.Context, host string, d time.Duration) error {
	key := f.layout.ForHost(host).HostState(host)
	c := &rkit.Call{Script: crawlDelayScript, Keys: []string{key}, Args: []any{max(d.Milliseconds(), 0), keepIdle.Milliseconds()}}
	err := f.pipe.Do(ctx, c)
	if err == nil {
		err = c.Reply.Err()
	}
	if err != nil {
		return fmt.Errorf("frontier: set crawl-delay of %s: %w", host, err)
	}
	return nil
}

// crawlDelayScript records a host's Crawl-delay in its state hash; the hash of a host
// with nothing waiting or in flight expires (see hostSchedLua's retire).
//
// KEYS[1] -> sc:{c}:h:<host>
// ARGV[1] -> Crawl-delay (ms; 0: none), ARGV[2] -> how long an idle host keeps it (ms)
// Output: 0 (a script's nil reply reads as redis.Nil, an error, in go-redis)
var crawlDelayScript = redis.NewScript(`
if ARGV[1] == '0' then redis.call('HDEL', KEYS[1], 'c') else redis.call('HSET', KEYS[1], 'c', ARGV[1]) end
local raw = redis.call('HGETALL', KEYS[1])
for i = 1, #raw, 2 do
  local k = raw[i]
  if (k == 'f' or string.byte(k, 1) == 113) and tonumber(raw[i + 1]) > 0 then return 0 end
end
if #raw > 0 then
  redis.call('HSET', KEYS[1], 'x', 1)
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
`)

// Leased reports whether the request with stream ID lease still holds a slot of host.
// A request delivered again after its fetcher died may have lost it (the dead fetcher
// gave it back before its ack went out, or the lease expired): it must not be fetched
// without one.
func (f *Frontier) Leased(ctx context.Context, host, lease string) (bool, error) {
	k := f.layout.ForHost(host)
	c := &rkit.Call{Script: leasedScript, Keys: []string{k.Leases, k.Sched}, Args: []any{host, lease, f.hosts.leaseTTL.Milliseconds()}}
	err := f.pipe.Do(ctx, c)
	var held int64
	if err == nil {
		held, err = c.Reply.(*redis.Cmd).Int64()
	}
	if err != nil {
		return false, fmt.Errorf("frontier: lease of %s: %w", host, err)
	}
	return held == 1, nil
}

// leasedScript reports whether a request still holds a slot of its host: its member
// in the leases (a host of concurrency above 1), or the host's entry in the schedule
// being its lease (a host of concurrency 1, see hostSchedLua).
//
// KEYS[1] -> sc:{c}:leases, KEYS[2] -> sc:{c}:sched
// ARGV[1] -> host, ARGV[2] -> the request's stream ID, ARGV[3] -> lease TTL (ms)
// Output: 1 when held, else 0
var leasedScript = redis.NewScript(`
if redis.call('ZSCORE', KEYS[1], ARGV[1] .. '|' .. ARGV[2]) then return 1 end
local at = redis.call('ZSCORE', KEYS[2], ARGV[1])
local ms = string.match(ARGV[2], '^(%d+)')
if at and ms and tonumber(at) == tonumber(ms) + tonumber(ARGV[3]) then return 1 end
return 0
`)
