package frontier

import (
	"context"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"
)

// hostSchedLua defines the functions of the host-scheduled frontier (the Mercator /
// URLFrontier shape, in Redis, per partition). Every host with waiting requests has
// its own queue (sc:{c}:hq:<host>, in the crawl's order) and is in exactly one of three
// places:
//
//   - ready (sc:{c}:ready): it may start a request now; scored by its best waiting
//     request's band, then by turn, so hosts of one band take turns and a host with a
//     high-priority request goes first;
//   - the schedule (sc:{c}:sched): it may not start one before a time (its delay since
//     the last start, a back-off), scored by that time;
//   - nowhere: every slot of its concurrency is taken; giving a slot back (a fetch
//     finishing, or its lease expiring) places it again.
//
// Handing out moves requests of ready hosts into the requests stream, best band first,
// as many per host as its free slots allow (one when it has a delay, at most the
// quantum otherwise), takes a lease per request for hosts with a concurrency limit, and
// sets the host's next start. So a fetcher never reads a request it may not fetch now.
// No function scans all hosts: each reads a bounded range of a sorted set.
//
// Every script that uses it (emit, dispatch, finish, move due retries, migrate) is
// composed by schedScript and takes the same prologue: KEYS[1..8] are schedKeys and
// ARGV[1..8] schedArgs, which fill S; the script's own keys and arguments follow, from
// KEYS[9] and ARGV[9]:
//
//	KEYS[1] -> S.stream  sc:{c}:requests
//	KEYS[2] -> S.waiting sc:{c}:waiting (the payloads of the requests in the host queues)
//	KEYS[3] -> S.seq     sc:{c}:seq
//	KEYS[4] -> S.ready   sc:{c}:ready
//	KEYS[5] -> S.sched   sc:{c}:sched
//	KEYS[6] -> S.leases  sc:{c}:leases
//	KEYS[7] -> S.hosts   sc:{c}:hosts (per-host state, see streams.Keys.Hosts)
//	KEYS[8] -> S.hq      sc:{c}:hq: (prefix of the host queues)
//	ARGV[1..4] -> S.conc, S.delay, S.ttl, S.quantum: the crawl's default per-host
//	concurrency (0: no limit), delay (ms), lease TTL (ms) and most requests of one host
//	per turn
//	ARGV[5] -> S.idp: prefix of the message UUIDs the script gives
//	ARGV[6] -> S.group: the fetch group, ARGV[7] -> S.mode: 'lag' or 'range' (how to
//	count its unread requests, see rkit.LuaUnread), ARGV[8] -> S.window: the most
//	requests left unread in the requests stream (0: the script hands nothing out)
const hostSchedLua = `
local S = {stream = KEYS[1], waiting = KEYS[2], seq = KEYS[3], ready = KEYS[4], sched = KEYS[5],
  leases = KEYS[6], hosts = KEYS[7], hq = KEYS[8],
  conc = tonumber(ARGV[1]), delay = tonumber(ARGV[2]), ttl = tonumber(ARGV[3]), quantum = tonumber(ARGV[4]),
  idp = ARGV[5], group = ARGV[6], mode = ARGV[7], window = tonumber(ARGV[8])}

-- room returns how many requests may enter the requests stream now, at most most: the
-- window less the entries the fetch group has not read yet.
local function room(most)
  return math.min(S.window - unread(S.stream, S.group, S.window, S.mode), most)
end

-- host_rule returns host's requests in flight, concurrency limit (0: none) and delay
-- (ms): the crawl's defaults, or the spider's limit rule for it, raised by its
-- robots.txt Crawl-delay and its AutoThrottle latency; and its back-off level.
local function host_rule(host)
  local st = redis.call('HMGET', S.hosts, host .. ':f', host .. ':r', host .. ':c', host .. ':a', host .. ':b')
  local conc, delay = S.conc, S.delay
  if st[2] then
    local c, d = string.match(st[2], '^(%d+) (%d+)$')
    if c then conc, delay = tonumber(c), tonumber(d) end
  end
  if st[3] then delay = math.max(delay, tonumber(st[3])) end
  if st[4] then delay = math.max(delay, math.min(tonumber(st[4]), 60000)) end
  return tonumber(st[1] or '0'), conc, delay, tonumber(st[5] or '0')
end

-- place puts host, which is neither ready nor scheduled, in the ready set, unless it
-- has nothing waiting or every slot is taken. Its turn number comes from S.seq, so it
-- goes behind the hosts of its band that are ready already.
local function place(host, inflight, conc)
  if conc > 0 and inflight >= conc then return end
  local head = redis.call('ZRANGE', S.hq .. host, 0, 0, 'WITHSCORES')
  if #head == 0 then return end
  local band = math.floor(tonumber(head[2]) / 1e9)
  redis.call('ZADD', S.ready, band * 1e9 + redis.call('INCR', S.seq) % 1e9, host)
end

-- wake places host after requests of band were added to its queue: a ready host whose
-- best band improved moves up, a scheduled host waits for its time, any other is placed.
local function wake(host, band)
  local cur = redis.call('ZSCORE', S.ready, host)
  if cur then
    cur = tonumber(cur)
    if band < math.floor(cur / 1e9) then redis.call('ZADD', S.ready, band * 1e9 + cur % 1e9, host) end
    return
  end
  if redis.call('ZSCORE', S.sched, host) then return end
  local inflight, conc = host_rule(host)
  place(host, inflight, conc)
end

-- enqueue puts a request in host's queue: its ID (a number from S.seq) in the queue, its
-- payload in S.waiting under that ID. Queues hold short members so that a small queue
-- stays a compact listpack: a ZSET with a member over 64 bytes is a skiplist, about
-- 1 KB even with one member, and a broad crawl has a queue per host.
local function enqueue(host, score, id, payload)
  redis.call('ZADD', S.hq .. host, score, id)
  redis.call('HSET', S.waiting, id, payload)
end

-- enqueue_many is enqueue for reqs[from..] of host ({score, payload, id} each) in one
-- ZADD and one HSET, up to a thousand at a time (Lua's unpack has a stack limit).
local function enqueue_many(host, reqs, from)
  for i = from, #reqs, 1000 do
    local z, w = {}, {}
    for k = i, math.min(i + 999, #reqs) do
      local r = reqs[k]
      z[#z + 1], z[#z + 2] = r[1], r[3]
      w[#w + 1], w[#w + 2] = r[3], r[2]
    end
    redis.call('ZADD', S.hq .. host, unpack(z))
    redis.call('HSET', S.waiting, unpack(w))
  end
end

-- queue_score is the score of the k-th request of a call in band: band × 1e9 plus its
-- place in the order of discovery (first found first when sign is 1, last found first
-- when -1), always within [band × 1e9, (band + 1) × 1e9).
local function queue_score(band, seq, sign)
  local off = seq % 1e9
  if sign < 0 then off = 1e9 - 1 - off end
  return band * 1e9 + off
end

-- free_slot gives back one of host's slots.
local function free_slot(host)
  if redis.call('HINCRBY', S.hosts, host .. ':f', -1) <= 0 then redis.call('HDEL', S.hosts, host .. ':f') end
end

-- expire_leases takes back up to max slots whose fetchers never gave them back (died)
-- and places their hosts again.
local function expire_leases(now, max)
  local gone = redis.call('ZRANGEBYSCORE', S.leases, '-inf', now, 'LIMIT', 0, max)
  for _, l in ipairs(gone) do
    redis.call('ZREM', S.leases, l)
    local host = string.match(l, '^(.*)|')
    free_slot(host)
    if not redis.call('ZSCORE', S.ready, host) and not redis.call('ZSCORE', S.sched, host) then
      local inflight, conc = host_rule(host)
      place(host, inflight, conc)
    end
  end
  return #gone
end

-- promote makes up to max hosts whose time has come ready (or leaves them out, when
-- they have nothing waiting or no free slot).
local function promote(now, max)
  local due = redis.call('ZRANGEBYSCORE', S.sched, '-inf', now, 'LIMIT', 0, max)
  if #due == 0 then return 0 end
  redis.call('ZREM', S.sched, unpack(due))
  for _, h in ipairs(due) do
    local inflight, conc = host_rule(h)
    place(h, inflight, conc)
  end
  return #due
end

-- hand_direct hands out requests of host that were just found, while its queue is empty
-- and it is not scheduled, straight to the requests stream, as far as room and its free
-- slots allow, skipping the trip through its queue (the common case of a crawl of few
-- hosts with room in the window). reqs is a list of {score, payload}; it is sorted and
-- the number handed out (the first ones) returned.
local function hand_direct(host, reqs, room, now)
  local inflight, conc, delay = host_rule(host)
  local take = math.min(room, #reqs)
  if conc > 0 then take = math.min(take, conc - inflight) end
  if delay > 0 then take = math.min(take, 1) end
  if take <= 0 then return 0 end
  if #reqs > 1 then table.sort(reqs, function(a, b) return a[1] < b[1] end) end
  local base = redis.call('INCRBY', S.seq, take) - take
  local leases = {}
  for i = 1, take do
    local id = xadd_msg(S.stream, S.idp .. (base + i), reqs[i][2])
    if conc > 0 then leases[#leases + 1], leases[#leases + 2] = now + S.ttl, host .. '|' .. id end
  end
  if conc > 0 then
    redis.call('ZADD', S.leases, unpack(leases))
    redis.call('HINCRBY', S.hosts, host .. ':f', take)
  end
  if delay > 0 then redis.call('ZADD', S.sched, now + delay, host) end
  return take
end

-- hand_out moves up to room requests of ready hosts into the requests stream, best
-- band first, hosts of a band in turn, and returns how many it moved.
local function hand_out(room, now)
  local moved, rounds = 0, 0
  -- One block of message numbers for the whole call (numbers left over are skipped).
  local base = redis.call('INCRBY', S.seq, room) - room
  while room > 0 and rounds < 64 do
    rounds = rounds + 1
    local hosts = redis.call('ZRANGE', S.ready, 0, math.min(room, 256) - 1)
    if #hosts == 0 then break end
    for _, h in ipairs(hosts) do
      if room <= 0 then break end
      redis.call('ZREM', S.ready, h)
      local inflight, conc, delay = host_rule(h)
      local take = math.min(room, S.quantum)
      if conc > 0 then take = math.min(take, conc - inflight) end
      if delay > 0 then take = math.min(take, 1) end
      local q = S.hq .. h
      local reqs = {}
      if take > 0 then
        local popped = redis.call('ZPOPMIN', q, take)
        for i = 1, #popped, 2 do reqs[#reqs + 1] = popped[i] end
      end
      if #reqs > 0 then
        local payloads = redis.call('HMGET', S.waiting, unpack(reqs))
        redis.call('HDEL', S.waiting, unpack(reqs))
        local leases = {}
        for _, m in ipairs(payloads) do
          if m then
            base = base + 1
            local id = xadd_msg(S.stream, S.idp .. base, m)
            if conc > 0 then
              leases[#leases + 1], leases[#leases + 2] = now + S.ttl, h .. '|' .. id
              inflight = inflight + 1
            end
          end
        end
        if #leases > 0 then redis.call('ZADD', S.leases, unpack(leases)) end
        if conc > 0 then redis.call('HSET', S.hosts, h .. ':f', inflight) end
        room, moved = room - #reqs, moved + #reqs
      end
      if delay > 0 and #reqs > 0 then
        redis.call('ZADD', S.sched, now + delay, h)
      else
        place(h, inflight, conc)
      end
    end
  end
  return moved
end
`

// schedScript composes a script of the host-scheduled frontier: before body, the
// shared Lua (rkit) and hostSchedLua with its prologue; pre (a dedup snippet) goes
// first.
func schedScript(pre, body string) *redis.Script {
	return redis.NewScript(pre + rkit.LuaNow + rkit.LuaXAdd + rkit.LuaUnread + hostSchedLua + body)
}

// schedKeys returns KEYS[1..8] of a host scheduler script on partition k (see
// hostSchedLua), then the script's own keys.
func schedKeys(k streams.Keys, own ...string) []string {
	return append([]string{k.Requests, k.Waiting, k.Seq, k.Ready, k.Sched, k.Leases, k.Hosts, k.HostQueues}, own...)
}

// schedArgs returns ARGV[1..8] of a host scheduler script (see hostSchedLua): the
// hosts' defaults, the message UUID prefix idp, and the hand-out window (0: none) with
// how to count unread requests; then the script's own arguments.
func schedArgs(d hostDefaults, idp string, window int, countUnread bool, own ...any) []any {
	return append([]any{max(d.Concurrency, 0), max(d.Delay.Milliseconds(), 0), d.leaseTTL.Milliseconds(), d.quantum,
		idp, streams.StageFetch, rkit.UnreadMode(countUnread), max(window, 0)}, own...)
}

// partIDPrefix is the prefix of the message UUIDs the frontier's scripts give to requests
// of partition p (with the partition's sequence counter, unique in the crawl).
func partIDPrefix(p int) string { return "sc-" + strconv.Itoa(p) + "-" }

// holding runs count for every partition of l in one pipeline and reports, per
// partition, whether it counted more than zero. A failed count reports true: the caller
// then runs its script, which reports the error.
func holding(ctx context.Context, rdb redis.UniversalClient, l streams.Layout, count func(redis.Pipeliner, streams.Keys) *redis.IntCmd) []bool {
	parts := l.Parts
	cmds := make([]*redis.IntCmd, len(parts))
	_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error { // errors are read per command
		for i, k := range parts {
			cmds[i] = count(p, k)
		}
		return nil
	})
	out := make([]bool, len(cmds))
	for i, c := range cmds {
		out[i] = c.Err() != nil || c.Val() > 0
	}
	return out
}
