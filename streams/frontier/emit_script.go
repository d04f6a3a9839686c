package frontier

import (
	"strconv"

	"github.com/redis/go-redis/v9"
)

// setSeenAdd is seen_add_arg over a plain set, for frontiers without a Deduper.
const setSeenAdd = `
local function seen_add_arg(base, fp) return redis.call('SADD', base, fp) end
`

// emitBody (run as the Frontier's emit script, after the crawl's seen_add_arg from its
// Deduper, rkit.LuaNow, rkit.LuaXAdd, rkit.LuaUnread and hostSchedLua) queues the new requests and
// items of one partition found by one or more parsed pages, in one step: a new
// fingerprint goes into the seen set and its request into its host's queue, and an
// item whose key is new goes into the items stream with its key recorded, so a crash
// can never leave a URL or an item key marked seen but not queued. The new requests of
// an idle host (nothing waiting, not scheduled) go straight to the requests stream as
// far as the window and the host's free slots allow (hand_direct); the others wake
// their hosts (see hostSchedLua), and when the window still has room, ready hosts'
// requests are handed out at once, so idle fetchers get work without waiting for a
// dispatcher round. Every key is the partition's.
//
// Each redis.call costs Redis a few µs beyond the command it runs: the caller passes
// each fingerprint in the form its dedup mode stores, the sequence counter is read once
// per call, and item keys are checked with one SMISMEMBER and recorded with one SADD.
//
// KEYS[1] -> sc:{c}:seen (the base key of the crawl's dedup: a set, buckets or a Bloom
// filter)
// KEYS[2] -> sc:{c}:waiting (payloads of the requests in host queues)
// KEYS[3] -> sc:{c}:stats (the partition's: max_pages_used of a crawl of one partition)
// KEYS[4] -> sc:{c}:seq
// KEYS[5] -> sc:{c}:requests
// KEYS[6] -> sc:{c}:seenat (fingerprint -> when queued, ms; used instead of the seen set
// when revisiting)
// KEYS[7] -> sc:{c}:items
// KEYS[8] -> sc:{c}:itemkeys
// KEYS[9] -> sc:{c}:ready, KEYS[10] -> sc:{c}:sched, KEYS[11] -> sc:{c}:leases,
// KEYS[12] -> sc:{c}:hosts, KEYS[13] -> sc:{c}:hq: (host queue prefix)
// ARGV[1] -> number of requests n, ARGV[2] -> max requests ever queued (0: no limit),
// ARGV[3] -> 1 or -1: first or last found first within a band,
// ARGV[4] -> dispatch window (0: do not hand out), ARGV[5] -> 'lag' or 'range',
// ARGV[6] -> revisit interval in ms (0: a URL is seen forever),
// ARGV[7] -> 1 when ARGV[2] is a budget reserved for this call in the crawl-wide
// counter (partitioned crawls; 0 then means none) rather than a limit on KEYS[3]'s
// max_pages_used, ARGV[8] -> number of items m,
// ARGV[9..12] -> the hosts' default concurrency, delay (ms), lease TTL (ms) and quantum
// (see hostSchedLua), ARGV[13] -> message UUID prefix;
// then per request: fingerprint (empty: do not filter; the dedup's script argument, or
// the raw fingerprint when revisiting), score band, payload, host (NormalHost), the
// host's limit rule ("<concurrency> <delay ms>"; empty: the defaults);
// then per item: key (empty: do not filter), payload, message ID
// Output: one byte per request ('q' queued, 'd' duplicate, 'o' over max_pages), then
// one per item ('a' added, 'd' duplicate key)
const emitBody = `
local n, limit, sign, revisit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[6])
local budget, m = ARGV[7] == '1', tonumber(ARGV[8])
S.ready, S.sched, S.leases, S.hosts, S.hq = KEYS[9], KEYS[10], KEYS[11], KEYS[12], KEYS[13]
S.waiting, S.seq, S.stream = KEYS[2], KEYS[4], KEYS[5]
S.conc, S.delay, S.ttl, S.quantum, S.idp = tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11]), tonumber(ARGV[12]), ARGV[13]
local first, items = emit_head + 1, emit_head + 1 + 5 * n
local now = 0
if revisit > 0 then now = now_ms() end
-- is_new records fp as seen and reports whether it was not (or was seen too long ago).
local function is_new(fp)
  if fp == '' then return true end
  if revisit == 0 then return seen_add_arg(KEYS[1], fp) == 1 end
  local at = redis.call('HGET', KEYS[6], fp)
  if at and now - tonumber(at) < revisit then return false end
  redis.call('HSET', KEYS[6], fp, now)
  return true
end
-- in_set returns, per element of list, whether it is in set key; add_all adds them.
-- Both go a thousand at a time (Lua's unpack has a stack limit).
local function in_set(key, list)
  local out = {}
  for i = 1, #list, 1000 do
    for _, r in ipairs(redis.call('SMISMEMBER', key, unpack(list, i, math.min(i + 999, #list)))) do out[#out + 1] = r == 1 end
  end
  return out
end
local function add_all(key, list)
  for i = 1, #list, 1000 do redis.call('SADD', key, unpack(list, i, math.min(i + 999, #list))) end
end
local out = {}
local rq, queued = 0, 0
if limit > 0 and not budget then queued = tonumber(redis.call('HGET', KEYS[3], 'max_pages_used') or '0') end
local fresh = {}
for k = 1, n do
  local i = first + 5 * (k - 1)
  if (budget or limit > 0) and queued + rq >= limit then
    out[k] = 'o'
  elseif is_new(ARGV[i]) then
    fresh[#fresh + 1] = i
    rq = rq + 1
    out[k] = 'q'
  else
    out[k] = 'd'
  end
end
-- max_pages_used is exact (max_pages reads it); the other counters are the caller's.
if rq > 0 and limit > 0 and not budget then redis.call('HINCRBY', KEYS[3], 'max_pages_used', rq) end
if #fresh > 0 then
  local seq = redis.call('INCRBY', KEYS[4], #fresh) - #fresh
  local byhost, hosts = {}, {}
  for j, i in ipairs(fresh) do
    local band, host = tonumber(ARGV[i + 1]), ARGV[i + 3]
    local h = byhost[host]
    if not h then
      h = {band = band, rule = ARGV[i + 4], reqs = {}}
      byhost[host] = h
      hosts[#hosts + 1] = host
    elseif band < h.band then
      h.band = band
    end
    h.reqs[#h.reqs + 1] = {queue_score(band, seq + j, sign), ARGV[i + 2], seq + j}
  end
  if #hosts > 1 then table.sort(hosts, function(a, b) return byhost[a].band < byhost[b].band end) end
  local window, room = tonumber(ARGV[4]), nil
  local function room_left()
    if room == nil then
      room = window - unread(KEYS[5], 'fetch', window, ARGV[5])
      if now == 0 then now = now_ms() end
    end
    return room
  end
  for _, host in ipairs(hosts) do
    local h = byhost[host]
    local sent = 0
    if redis.call('EXISTS', S.hq .. host) == 0 and not redis.call('ZSCORE', S.sched, host) then
      -- An idle host: its requests may go straight to the stream.
      if h.rule ~= '' then redis.call('HSET', S.hosts, host .. ':r', h.rule) end
      if window > 0 and room_left() > 0 then
        sent = hand_direct(host, h.reqs, room, now)
        room = room - sent
      end
    end
    if sent < #h.reqs then enqueue_many(host, h.reqs, sent + 1) end
    if sent < #h.reqs then wake(host, h.band) end
  end
  if window > 0 and redis.call('ZCARD', S.ready) > 0 and room_left() > 0 then hand_out(room, now) end
end
if m > 0 then
  local keyed = {}
  for i = items, items + 3 * m - 1, 3 do
    if ARGV[i] ~= '' then keyed[#keyed + 1] = ARGV[i] end
  end
  local known, fresh_keys = {}, {}
  if #keyed > 0 then
    for j, yes in ipairs(in_set(KEYS[8], keyed)) do
      if yes then known[keyed[j]] = true end
    end
  end
  for i = items, items + 3 * m - 1, 3 do
    local key = ARGV[i]
    if key ~= '' and known[key] then
      out[#out + 1] = 'd'
    else
      if key ~= '' then
        known[key] = true -- the same key twice in this call
        fresh_keys[#fresh_keys + 1] = key
      end
      xadd_msg(KEYS[7], ARGV[i + 2], ARGV[i + 1])
      out[#out + 1] = 'a'
    end
  end
  -- After the XADDs: were the script cut short (OOM), no key is recorded without its item.
  if #fresh_keys > 0 then add_all(KEYS[8], fresh_keys) end
end
return table.concat(out)
`

// emitHead is the number of ARGV before the requests in the emit script.
const emitHead = 13

// emitHeadLua tells the emit script emitHead.
var emitHeadLua = "local emit_head = " + strconv.Itoa(emitHead) + "\n"

// reserveScript takes up to n of the crawl's max_pages budget (partitioned crawls: each
// partition's emit script spends what the call reserved, and the caller gives back
// what it did not spend). A process dying between the two loses at most one call's
// reservation from the budget.
//
// KEYS[1] -> sc:{c}:stats (crawl-wide)
// ARGV[1] -> n, ARGV[2] -> max_pages
// Output: the number reserved
var reserveScript = redis.NewScript(`
local used = tonumber(redis.call('HGET', KEYS[1], 'max_pages_used') or '0')
local take = math.max(0, math.min(tonumber(ARGV[1]), tonumber(ARGV[2]) - used))
if take > 0 then redis.call('HINCRBY', KEYS[1], 'max_pages_used', take) end
return take
`)
