package frontier

import (
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"
)

// hostSchedLua defines the state of the host-scheduled frontier (the Mercator /
// URLFrontier shape, in Redis, per partition) and the functions that change it. Every
// host with waiting requests keeps them in one LIST per score band in use
// (sc:{c}:hq:<host>|<band>, entries in the compact form of entry.go, handed out from
// the head) and a small state hash (sc:{c}:h:<host>: the bands that may hold requests,
// in flight, its rule, Crawl-delay, AutoThrottle latency), and is in exactly one of four
// places:
//
//   - ready (sc:{c}:ready): it may start a request now; scored by its best waiting
//     band, then by turn, so hosts of one band take turns and a host with a
//     high-priority request goes first;
//   - the schedule (sc:{c}:sched): it may not start one before a time (its delay, a
//     back-off), scored by that time; a host of concurrency 1 with its request in
//     flight waits there too, until its lease expires (the lease is the entry: its
//     score is the ms of the request's stream ID plus the lease TTL), unless the finish
//     of that request schedules it earlier;
//   - nowhere, with requests in flight (a host of concurrency above 1): every slot is
//     taken, or it has nothing waiting; a finish (or a lease expiring, sc:{c}:leases)
//     places it again;
//   - idle: nothing waiting, in flight or scheduled. An idle host costs nothing: its
//     state hash is deleted (kept for a while when it holds a Crawl-delay or an
//     AutoThrottle latency, see retire).
//
// Handing out moves requests of ready hosts into the requests stream, best band first,
// as many per host as its free slots allow (one when it has a delay, at most the
// quantum otherwise; a host with a delay and a limit starts its next request its delay
// after the previous one ended: one_at_a_time), takes a lease per request for hosts with a concurrency limit, and
// sets the host's next start. So a fetcher never reads a request it may not fetch now.
// No function scans all hosts: each reads a bounded range of a sorted set.
//
// A host of concurrency 1 takes its turns without its state being read: its ready
// score carries its best band and a bit for concurrency 1 (place), so hand_one starts
// its request with one LPOP, and the band it took is kept in S.bands (sc:{c}:ready:bands,
// Keys.ReadyBands, built from KEYS[4]), so promote makes it ready again with the rest of
// the due hosts' bands (one HMGET). An entry goes when the host's bands change
// (qmark), its rule changes (activate) or it is retired; without one the state is read.
//
// Redis work per page is what a broad crawl pays for, so a script call reads a host's
// state once (state, one HGETALL, cached for the call) and writes it once (commit, one
// HSET), and gathers its writes to the ready set, the schedule, the leases and the
// partition's counters into one command each (zadd, zrem, count). A read of a sorted
// set first sends what is gathered for it.
//
// Every script that uses it (emit, dispatch, finish, move due retries, migrate) is
// composed by schedScript and takes the same prologue, KEYS[1..9] (schedKeys) and
// ARGV[1..10] (schedArgs), which fill S; the script's own keys and arguments follow,
// from KEYS[10] and ARGV[11], and it ends with commit():
//
//	KEYS[1] -> S.stream  sc:{c}:requests
//	KEYS[2] -> S.counts  sc:{c}:counts (the partition's counters, streams.Keys.Counts)
//	KEYS[3] -> S.seq     sc:{c}:seq
//	KEYS[4] -> S.ready   sc:{c}:ready
//	KEYS[5] -> S.sched   sc:{c}:sched
//	KEYS[6] -> S.leases  sc:{c}:leases
//	KEYS[7] -> S.hp      sc:{c}:h: (prefix of the host state hashes)
//	KEYS[8] -> S.hq      sc:{c}:hq: (prefix of the host queues)
//	KEYS[9] -> S.backoff sc:{c}:backoff
//	ARGV[1..4] -> S.conc, S.delay, S.ttl, S.quantum: the crawl's default per-host
//	concurrency (0: no limit), delay (ms), lease TTL (ms) and most requests of one host
//	per turn
//	ARGV[5] -> S.idp: prefix of the message UUIDs the script gives
//	ARGV[6] -> S.group: the fetch group, ARGV[7] -> S.mode: 'lag' or 'range' (how to
//	count its unread requests, see rkit.LuaUnread), ARGV[8] -> S.window: the most
//	requests left unread in the requests stream (0: the script hands nothing out)
//	ARGV[9] -> S.keep: how long an idle host's Crawl-delay and AutoThrottle latency
//	are kept (ms)
//	ARGV[10] -> S.sign: 1 or -1, first or last found first within a band
const hostSchedLua = `
local S = {stream = KEYS[1], counts = KEYS[2], seq = KEYS[3], ready = KEYS[4], sched = KEYS[5],
  leases = KEYS[6], hp = KEYS[7], hq = KEYS[8], backoff = KEYS[9], bands = KEYS[4] .. ':bands',
  conc = tonumber(ARGV[1]), delay = tonumber(ARGV[2]), ttl = tonumber(ARGV[3]), quantum = tonumber(ARGV[4]),
  idp = ARGV[5], group = ARGV[6], mode = ARGV[7], window = tonumber(ARGV[8]), keep = tonumber(ARGV[9]),
  sign = tonumber(ARGV[10])}

-- Writes gathered per sorted set (Z: key -> {op, args}), per counter (C), per host
-- (HS[host].dirty) and to S.bands (B: host -> band, false to delete), sent by zflush
-- and commit.
local Z, C, HS, B = {}, {}, {}, {}
local function zflush(key)
  local p = Z[key]
  if not p then return end
  Z[key] = nil
  local a = p.args
  for i = 1, #a, 1000 do
    local j = math.min(i + 999, #a)
    if p.op == 'rem' then redis.call('ZREM', key, unpack(a, i, j))
    elseif p.op == 'add' then redis.call('ZADD', key, unpack(a, i, j))
    else redis.call('ZADD', key, string.upper(p.op), unpack(a, i, j)) end
  end
end
local function zpend(key, op)
  local p = Z[key]
  if p and p.op ~= op then zflush(key); p = nil end
  if not p then p = {op = op, args = {}}; Z[key] = p end
  return p.args
end
-- zadd adds member at score (op 'add'; 'gt': only to raise an existing score, 'nx':
-- only when absent); zrem removes it.
local function zadd(key, score, member, op)
  local a = zpend(key, op or 'add')
  a[#a + 1], a[#a + 2] = score, member
end
local function zrem(key, member)
  local a = zpend(key, 'rem')
  a[#a + 1] = member
end
local function zscore(key, member)
  zflush(key)
  return redis.call('ZSCORE', key, member)
end
local function count(field, n) C[field] = (C[field] or 0) + n end

-- seq_next returns a number unique in the partition (turns in the ready set, message
-- UUIDs), from a block reserved once per call.
local seq_at, seq_left = 0, 0
local function seq_next()
  if seq_left == 0 then
    seq_at, seq_left = redis.call('INCRBY', S.seq, 64) - 64, 64
  end
  seq_at, seq_left = seq_at + 1, seq_left - 1
  return seq_at
end

-- state returns host's state, read once per call: q (bands that may hold requests: a
-- band's mark goes when a pop finds its list short), f (in flight, for a concurrency
-- above 1), r (its rule), c (Crawl-delay ms), a (AutoThrottle ms), x (its hash
-- expires); dirty holds the fields to write (false: delete).
local function state(host)
  local st = HS[host]
  if st then return st end
  st = {q = {}, f = 0, dirty = {}, host = host}
  local raw = redis.call('HGETALL', S.hp .. host)
  for i = 1, #raw, 2 do
    local k, v = raw[i], raw[i + 1]
    local c = string.byte(k, 1)
    if c == 113 then -- q<band>
      if v ~= '0' then st.q[tonumber(string.sub(k, 2))] = true end
    elseif k == 'f' then st.f = math.max(tonumber(v), 0)
    elseif k == 'r' then st.r = v
    elseif k == 'c' then st.c = tonumber(v)
    elseif k == 'a' then st.a = tonumber(v)
    elseif k == 'x' then st.x = true
    end
  end
  HS[host] = st
  return st
end
local function hset(st, field, v) st.dirty[field] = v end

-- rule returns host's concurrency limit (0: none) and delay (ms): the crawl's defaults,
-- or the spider's limit rule for it, raised by its Crawl-delay and AutoThrottle latency.
local function rule(st)
  local conc, delay = S.conc, S.delay
  if st.r then
    local c, d = string.match(st.r, '^(%d+) (%d+)$')
    if c then conc, delay = tonumber(c), tonumber(d) end
  end
  if st.c then delay = math.max(delay, st.c) end
  if st.a then delay = math.max(delay, math.min(st.a, 60000)) end
  return conc, delay
end

-- one_at_a_time reports whether host, which has a concurrency limit above 1 and a
-- delay, has a request in flight: such a host starts one request at a time, each its
-- delay after the previous one ended (its finish schedules it), so that no two of its
-- requests reach it closer than the delay however late a fetcher sends one it was
-- handed. (A host of concurrency 1 always works so; one without a limit holds no lease,
-- so its delay counts from each start.)
local function one_at_a_time(st, conc, delay)
  return delay > 0 and conc > 1 and st.f > 0
end

-- ready_one reads a ready score (see place): the host's best band, and whether its
-- concurrency was 1 when it was placed (the turn's lowest bit), which lets hand_out
-- start its request without reading its state.
local function ready_one(score)
  score = tonumber(score)
  local band = math.floor(score / 1e9)
  if band * 1e9 > score then band = band - 1 elseif (band + 1) * 1e9 <= score then band = band + 1 end
  return band, (score - band * 1e9) % 2 == 1
end

-- best_band returns host's best band with requests waiting, nil when none.
local function best_band(st)
  local best = nil
  for b in pairs(st.q) do
    if best == nil or b < best then best = b end
  end
  return best
end

-- qmark marks band as holding requests of host, or not.
local function qmark(st, band, on)
  if st.host then B[st.host] = false end
  if on then st.q[band] = true; hset(st, 'q' .. band, 1)
  else st.q[band] = nil; hset(st, 'q' .. band, false) end
end

-- activate readies the state of a host about to get requests: an expiring hash is kept,
-- and the rule given with them recorded ('': the defaults).
local function activate(host, st, rule_arg)
  if st.x then
    redis.call('PERSIST', S.hp .. host)
    st.x = nil
    hset(st, 'x', false)
  end
  if rule_arg ~= nil and rule_arg ~= '' and st.r ~= rule_arg then
    st.r = rule_arg
    hset(st, 'r', rule_arg)
    B[host] = false
    -- A ready host's score says whether its concurrency is 1 (see place): set it again.
    local cur = zscore(S.ready, host)
    if cur then
      local band, was = ready_one(cur)
      local one, now_one = 0, rule(st) == 1
      if now_one then one = 1 end
      if was ~= now_one then zadd(S.ready, band * 1e9 + (tonumber(cur) % 1e9) - (tonumber(cur) % 2) + one, host) end
    end
  end
end

-- enqueue appends entries (in order of discovery) to host's queue of band.
local function enqueue(host, st, band, entries)
  if #entries == 0 then return end
  local key = S.hq .. host .. '|' .. band
  local cmd = 'RPUSH'
  if S.sign < 0 then cmd = 'LPUSH' end
  for i = 1, #entries, 1000 do redis.call(cmd, key, unpack(entries, i, math.min(i + 999, #entries))) end
  if not st.q[band] then qmark(st, band, true) end
  count('waiting', #entries)
end

-- pop takes up to take entries of host, best band first, and returns them.
local function pop(host, st, take)
  local out = {}
  while #out < take do
    local band = best_band(st)
    if band == nil then break end
    local want = take - #out
    local got = redis.call('LPOP', S.hq .. host .. '|' .. band, want)
    if not got then got = {} end
    for _, e in ipairs(got) do out[#out + 1] = e end
    if #got < want then qmark(st, band, false) end
  end
  count('waiting', -#out)
  return out
end

-- retire forgets an idle host: nothing waiting, in flight or scheduled. Its Crawl-delay
-- and AutoThrottle latency are kept for S.keep ms in case it gets requests again.
local function retire(host, st)
  local key = S.hp .. host
  redis.call('DEL', key)
  B[host] = false
  HS[host] = {q = {}, f = 0, dirty = {}, c = st.c, a = st.a, host = host}
  if st.c or st.a then
    local f = {'x', 1}
    if st.c then f[#f + 1], f[#f + 2] = 'c', st.c end
    if st.a then f[#f + 1], f[#f + 2] = 'a', st.a end
    redis.call('HSET', key, unpack(f))
    redis.call('PEXPIRE', key, S.keep)
    HS[host].x = true
  end
end

-- place puts host, which is neither ready nor scheduled, in the ready set, unless every
-- slot is taken (a finish places it) or it has nothing waiting (it is retired when it
-- has nothing in flight either). Its turn goes behind the hosts of its band that are
-- ready already.
local function place(host, st)
  local band = best_band(st)
  if band == nil then
    if st.f == 0 then retire(host, st) end
    return
  end
  local conc, delay = rule(st)
  if conc > 1 and (st.f >= conc or one_at_a_time(st, conc, delay)) then return end
  local one = 0
  if conc == 1 then one = 1 end
  zadd(S.ready, band * 1e9 + (seq_next() % 5e8) * 2 + one, host)
end

-- place_one makes host ready in band without reading its state: a host of concurrency
-- 1 whose band S.bands kept (see promote).
local function place_one(host, band)
  zadd(S.ready, band * 1e9 + (seq_next() % 5e8) * 2 + 1, host)
end

-- wake places host after requests of band were queued for it; before is its best band
-- before them (nil: it had nothing waiting). A host with nothing waiting before is
-- placed unless it is scheduled; a ready host whose best band improved moves up.
local function wake(host, st, band, before)
  if before == nil then
    if zscore(S.sched, host) then return end
    place(host, st)
  elseif band < before then
    local cur = zscore(S.ready, host)
    if cur then zadd(S.ready, band * 1e9 + tonumber(cur) % 1e9, host) end
  end
end

-- requeue puts payload, a request kept whole (from the delayed set or the revisit
-- schedule), in host's queue at band under rule_arg, and wakes the host.
local function requeue(host, band, rule_arg, payload)
  local st = state(host)
  activate(host, st, rule_arg)
  local before = best_band(st)
  enqueue(host, st, band, {whole(payload)})
  wake(host, st, band, before)
end

-- lease_end is when the lease of the request with stream ID id ends (ms): the ID's
-- time plus the lease TTL.
local function lease_end(id)
  return tonumber(string.match(id, '^(%d+)')) + S.ttl
end

-- take_slots records the requests handed out of host (their stream IDs in ids) at now:
-- a lease each when it has a concurrency limit. A host of concurrency 1 waits in the
-- schedule until its lease ends; any other has a lease each in S.leases and counts them.
local function take_slots(host, st, conc, ids, now)
  count('handed_out', #ids)
  if conc == 0 or #ids == 0 then return end
  if conc == 1 then
    zadd(S.sched, lease_end(ids[1]), host)
    return
  end
  for _, id in ipairs(ids) do zadd(S.leases, now + S.ttl, host .. '|' .. id) end
  st.f = st.f + #ids
  hset(st, 'f', st.f)
end

-- free_slots gives n of host's slots back.
local function free_slots(host, n)
  local st = HS[host]
  if st then
    st.f = math.max(st.f - n, 0)
    hset(st, 'f', st.f)
  else
    redis.call('HINCRBY', S.hp .. host, 'f', -n)
  end
end

-- commit sends what the call gathered: each host's changed fields, the sorted sets'
-- writes, the counters.
local function commit()
  for host, st in pairs(HS) do
    local set, del = {}, {}
    for k, v in pairs(st.dirty) do
      if v == false then del[#del + 1] = k else set[#set + 1], set[#set + 2] = k, v end
    end
    if #set > 0 then redis.call('HSET', S.hp .. host, unpack(set)) end
    if #del > 0 then redis.call('HDEL', S.hp .. host, unpack(del)) end
    st.dirty = {}
  end
  local bset, bdel = {}, {}
  for host, band in pairs(B) do
    if band then bset[#bset + 1], bset[#bset + 2] = host, band else bdel[#bdel + 1] = host end
  end
  for i = 1, #bset, 1000 do redis.call('HSET', S.bands, unpack(bset, i, math.min(i + 999, #bset))) end
  for i = 1, #bdel, 1000 do redis.call('HDEL', S.bands, unpack(bdel, i, math.min(i + 999, #bdel))) end
  B = {}
  for key in pairs(Z) do zflush(key) end
  for field, n in pairs(C) do
    if n ~= 0 then redis.call('HINCRBY', S.counts, field, n) end
  end
  C = {}
end

-- room returns how many requests may enter the requests stream now, at most most: the
-- window less the entries the fetch group has not read yet.
local function room(most)
  return math.min(S.window - unread(S.stream, S.group, S.window, S.mode), most)
end
`

// schedScript composes a script of the host-scheduled frontier: before body, the
// shared Lua (rkit), expandLua, hostSchedLua with its prologue and handOutLua; pre (a
// dedup snippet) goes first.
func schedScript(pre, body string) *redis.Script {
	return redis.NewScript(pre + rkit.LuaNow + rkit.LuaXAdd + rkit.LuaUnread + expandLua + hostSchedLua + handOutLua + body)
}

// schedKeys returns KEYS[1..9] of a host scheduler script on partition k (see
// hostSchedLua), then the script's own keys.
func schedKeys(k streams.Keys, own ...string) []string {
	return append([]string{k.Requests, k.Counts, k.Seq, k.Ready, k.Sched, k.Leases, k.HostStates, k.HostQueues, k.Backoff}, own...)
}

// schedHead is the number of ARGV of the prologue (schedArgs without the script's own).
const schedHead = 10

// keepIdle is how long an idle host's Crawl-delay and AutoThrottle latency are kept
// (about as long as its robots.txt is cached).
const keepIdle = 24 * time.Hour

// schedArgs returns ARGV[1..10] of a host scheduler script (see hostSchedLua): the
// hosts' defaults, the message UUID prefix idp, the hand-out window (0: none) with how
// to count unread requests, and the order's sign; then the script's own arguments.
func schedArgs(d hostDefaults, idp string, window int, countUnread bool, sign int, own ...any) []any {
	return append([]any{max(d.Concurrency, 0), max(d.Delay.Milliseconds(), 0), d.leaseTTL.Milliseconds(), d.quantum,
		idp, streams.StageFetch, rkit.UnreadMode(countUnread), max(window, 0), keepIdle.Milliseconds(), sign}, own...)
}

// partIDPrefix is the prefix of the message UUIDs the frontier's scripts give to requests
// of partition p (with the partition's sequence counter, unique in the crawl).
func partIDPrefix(p int) string { return "sc-" + strconv.Itoa(p) + "-" }
