package frontier

import (
	"strconv"

	"github.com/redis/go-redis/v9"
)

// newEmitScript composes the emit script: the crawl's dedup snippet (seenAdd, which
// defines seen_add_arg), the shared Lua and the host scheduler's functions, then
// emitBody.
func newEmitScript(seenAdd string) *redis.Script {
	return schedScript(seenAdd, emitHeadLua+emitBody)
}

// setSeenAdd is seen_add_arg over a plain set, for frontiers without a Deduper.
const setSeenAdd = `
local function seen_add_arg(base, fp) return redis.call('SADD', base, fp) end
`

// emitBody (run as the Frontier's emit script, after the crawl's seen_add_arg from its
// Deduper and the host scheduler, see schedScript) queues the new requests and items of
// one partition found by one or more parsed pages, in one step: a new fingerprint goes
// into the seen set and its request into its host's queue, and an item whose key is new
// goes into the items stream with its key recorded, so a crash can never leave a URL or
// an item key marked seen but not queued. The new requests of an idle host (nothing
// waiting, in flight or scheduled) go straight to the requests stream as far as the
// window and the host's free slots allow (hand_direct); the others wake their hosts
// (see hostSchedLua), and when the window still has room, ready hosts' requests are
// handed out at once, so idle fetchers get work without waiting for a dispatcher round.
// Every key is the partition's; the partition's counters count the fingerprints
// recorded new, the requests queued and the items added.
//
// Each redis.call costs Redis a few µs beyond the command it runs: the caller passes
// each fingerprint in the form its dedup mode stores, and a host's state is read once
// and written once. Item keys are kept the crawl's dedup's way (see emitItemsLua).
//
// KEYS[1..9], ARGV[1..10] -> schedKeys, schedArgs (see hostSchedLua; the window is
// the dispatch window, 0: do not hand out)
// KEYS[10] -> sc:{c}:seen (the base key of the crawl's dedup: a set, buckets or a Bloom
// filter)
// KEYS[11] -> sc:{c}:stats (the partition's: max_pages_used of a crawl of one partition)
// KEYS[12] -> sc:{c}:seenat (fingerprint -> when queued, ms; used instead of the seen
// set when revisiting)
// KEYS[13] -> sc:{c}:items
// KEYS[14] -> sc:{c}:itemkeys (the base key of the item keys: buckets or a set)
// KEYS[15], KEYS[16] -> sc:{c}:budget, sc:{c}:budget:top (see emitBudgetLua)
// ARGV[11] -> number of requests n, ARGV[12] -> max requests ever queued (0: no limit),
// ARGV[13] -> revisit interval in ms (0: a URL is seen forever),
// ARGV[14] -> 1 when ARGV[12] is a budget reserved for this call in the crawl-wide
// counter (partitioned crawls; 0 then means none) rather than a limit on KEYS[11]'s
// max_pages_used, ARGV[15] -> number of items m, ARGV[16] -> 1 when KEYS[14] is a set
// of item keys from before they went into buckets (see dedup.Deduper.Lua);
// then per request: fingerprint (empty: do not filter; the dedup's script argument, or
// the raw fingerprint when revisiting), score band, entry (entry.go), host (its key,
// spiders.HostKey), the host's limit rule ("<concurrency> <delay ms>"; empty: the
// defaults);
// then per item: key (empty: do not filter), payload, message ID, record (empty: not
// versioned), expected record, records hash (sc:{c}:itemrec:<bucket>; see emitItemsLua);
// then the budget section (see emitBudgetLua)
// Output: one byte per request ('q' queued, 'd' duplicate, 'o' over max_pages, 'b'
// over its host's budget: recorded seen, not queued), then one per item ('a' added,
// 'd' duplicate key, 'u' unchanged, 'r' record moved)
const emitBody = `
local n, limit, revisit = tonumber(ARGV[11]), tonumber(ARGV[12]), tonumber(ARGV[13])
local budget, m, item_set = ARGV[14] == '1', tonumber(ARGV[15]), ARGV[16] == '1'
local first, items = emit_head + 1, emit_head + 1 + 5 * n
local now = 0
if revisit > 0 then now = now_ms() end
` + emitBudgetLua + `
-- is_new records fp as seen and reports whether it was not (or was seen too long ago).
local function is_new(fp)
  if fp == '' then return true end
  if revisit == 0 then return seen_add_arg(KEYS[10], fp) == 1 end
  local at = redis.call('HGET', KEYS[12], fp)
  if at and now - tonumber(at) < revisit then return false end
  redis.call('HSET', KEYS[12], fp, now)
  return true
end
local out = {}
local rq, queued, fps = 0, 0, 0
if limit > 0 and not budget then queued = tonumber(redis.call('HGET', KEYS[11], 'max_pages_used') or '0') end
local fresh = {}
for k = 1, n do
  local i = first + 5 * (k - 1)
  if (budget or limit > 0) and queued + rq >= limit then
    out[k] = 'o'
  elseif is_new(ARGV[i]) then
    if ARGV[i] ~= '' then fps = fps + 1 end
    if budget_take(ARGV[i + 3]) then
      fresh[#fresh + 1] = i
      rq = rq + 1
      out[k] = 'q'
    else
      out[k] = 'b' -- over its host's budget: seen, never queued
    end
  else
    out[k] = 'd'
  end
end
-- max_pages_used is exact (max_pages reads it); the other counters are the caller's.
if rq > 0 and limit > 0 and not budget then redis.call('HINCRBY', KEYS[11], 'max_pages_used', rq) end
count('seen', fps)
count('queued', rq)
if #fresh > 0 then
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
    h.reqs[#h.reqs + 1] = {band, ARGV[i + 2], j}
  end
  if #hosts > 1 then table.sort(hosts, function(a, b) return byhost[a].band < byhost[b].band end) end
  local window, left = S.window, nil
  local function room_left()
    if left == nil then
      left = room(math.huge)
      if now == 0 then now = now_ms() end
    end
    return left
  end
  for _, host in ipairs(hosts) do
    local h = byhost[host]
    local st = state(host)
    activate(host, st, h.rule)
    local before = best_band(st)
    local idle = before == nil and st.f == 0 and not zscore(S.sched, host)
    local sent = 0
    if idle and window > 0 and room_left() > 0 then
      sent = hand_direct(host, st, h.reqs, left, now)
      left = left - sent
    end
    if sent < #h.reqs then
      -- The others into the host's queues, band by band, in order of discovery.
      local byband, bands = {}, {}
      for x = sent + 1, #h.reqs do
        local r = h.reqs[x]
        local l = byband[r[1]]
        if not l then
          l = {}
          byband[r[1]] = l
          bands[#bands + 1] = r[1]
        end
        l[#l + 1] = r
      end
      for _, b in ipairs(bands) do
        local l = byband[b]
        table.sort(l, function(x, y) return x[3] < y[3] end)
        local es = {}
        for y, r in ipairs(l) do es[y] = r[2] end
        enqueue(host, st, b, es)
      end
    end
    if sent > 0 then
      local conc, delay = rule(st)
      after_start(host, st, conc, delay, sent, now)
    elseif idle then
      place(host, st)
    else
      wake(host, st, h.band, before)
    end
  end
  if window > 0 then
    zflush(S.ready)
    if redis.call('ZCARD', S.ready) > 0 and room_left() > 0 then hand_out(left, now) end
  end
end
` + emitItemsLua + `
budget_commit()
commit()
return table.concat(out)
`

// emitHead is the number of ARGV before the requests in the emit script.
const emitHead = schedHead + 6

// emitHeadLua tells the emit script emitHead and emitItemArgs.
var emitHeadLua = "local emit_head = " + strconv.Itoa(emitHead) + "\nlocal emit_item_args = " + strconv.Itoa(emitItemArgs) + "\n"
