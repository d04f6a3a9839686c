package frontier

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"
)

// maxBackoffMs is maxHostBackoff for the scripts.
var maxBackoffMs = strconv.FormatInt(maxHostBackoff.Milliseconds(), 10)

// finishLua (after hostSchedLua) defines how fetchers' turns at hosts end: a slot comes
// back, the host's next start moves to its delay after the end of the request (or
// further for a back-off), a request is requeued when asked, and the host is placed
// again.
//
// Turns that ended plainly (finish_plain: the host answered, no AutoThrottle, no
// requeue), the common case, cost no command of their own at a host of concurrency 1
// and one (the count of its slots) at any other: the delay the caller computed is used
// as it is, the leases and back-off levels of the whole batch are read and written in
// one command each, and the schedule is written in one; the host's state is not read (a
// host whose turn ends with nothing to wait for is put in the schedule at once, and
// placed, or retired, when promote reads it). The others (finish_one) read the host's
// state.
var finishLua = `
-- decay lowers a back-off level by n answers.
local function decay(host, level, n)
  if level - n <= 0 then redis.call('HDEL', S.backoff, host) else redis.call('HSET', S.backoff, host, level - n) end
end

-- holds reports, per lease {host, id} of a host of concurrency 1, whether it is still
-- the host's: its entry in the schedule is that lease.
local function holds(leases)
  local out = {}
  if #leases == 0 then return out end
  zflush(S.sched)
  for i = 1, #leases, 1000 do
    local hosts = {}
    for j = i, math.min(i + 999, #leases) do hosts[#hosts + 1] = leases[j][1] end
    for j, at in ipairs(redis.call('ZMSCORE', S.sched, unpack(hosts))) do
      local l = leases[i + j - 1]
      out[i + j - 1] = at and tonumber(at) == lease_end(l[2])
    end
  end
  return out
end

-- schedule sets host's next start to want (now or later), by kind: 'one', a host of
-- concurrency 1 whose lease was just given back (its entry is replaced); 'gt' any
-- other, unless a later time is set (a back-off); it leaves the ready set. It returns
-- the next start (0: now).
local function schedule(host, kind, want, now)
  if kind == 'one' then
    zadd(S.sched, math.max(want, now), host)
  elseif want > now then
    zrem(S.ready, host)
    zadd(S.sched, want, host, 'gt')
  else
    zadd(S.sched, now, host, 'nx') -- may start now: promote places (or retires) it
  end
  if want > now then return want end
  return 0
end

-- finish_plain ends the plain turns of a batch (turns: {t (place in out), host, lease,
-- ago, delay, conc} each) and puts each one's next start in out.
local function finish_plain(turns, now, out)
  -- Leases: of hosts of concurrency 1, their entry in the schedule; of the others,
  -- their member in S.leases, whose slot count goes down by those freed.
  local ones, many = {}, {}
  for _, u in ipairs(turns) do
    if u.lease ~= '' and u.conc == 1 then ones[#ones + 1] = {u.host, u.lease, u}
    elseif u.lease ~= '' then many[#many + 1] = u end
  end
  for j, held in pairs(holds(ones)) do ones[j][3].held = held end
  if #many > 0 then
    zflush(S.leases)
    local freed, gone = {}, {}
    for i = 1, #many, 1000 do
      local members = {}
      for j = i, math.min(i + 999, #many) do members[#members + 1] = many[j].host .. '|' .. many[j].lease end
      for j, at in ipairs(redis.call('ZMSCORE', S.leases, unpack(members))) do
        if at then
          local u = many[i + j - 1]
          gone[#gone + 1] = members[j]
          freed[u.host] = (freed[u.host] or 0) + 1
        end
      end
    end
    for i = 1, #gone, 1000 do redis.call('ZREM', S.leases, unpack(gone, i, math.min(i + 999, #gone))) end
    for h, n in pairs(freed) do free_slots(h, n) end
  end
  -- Per host: back-off levels decay with each answer, and the latest end counts.
  local byhost, hosts = {}, {}
  for _, u in ipairs(turns) do
    local g = byhost[u.host]
    if not g then
      g = {n = 0, ago = u.ago, delay = u.delay, ts = {}}
      byhost[u.host] = g
      hosts[#hosts + 1] = u.host
    end
    g.n, g.ts[#g.ts + 1] = g.n + 1, u.t
    g.delay = math.max(g.delay, u.delay)
    if u.conc == 1 and u.lease ~= '' then
      -- A host of concurrency 1: the turn whose lease is its entry in the schedule
      -- counts; a late finish of a lease that ended counts for nothing (the host may be
      -- someone else's now).
      if u.held then g.kind, g.ago = 'one', u.ago elseif g.kind == nil then g.kind = 'stale' end
    else
      g.kind, g.ago = 'gt', math.min(g.ago, u.ago)
    end
  end
  for i = 1, #hosts, 1000 do
    local part = {unpack(hosts, i, math.min(i + 999, #hosts))}
    for j, level in ipairs(redis.call('HMGET', S.backoff, unpack(part))) do
      if level then decay(part[j], tonumber(level), byhost[part[j]].n) end
    end
  end
  for _, h in ipairs(hosts) do
    local g = byhost[h]
    local next = 0
    if g.kind ~= 'stale' then
      local want = 0
      if g.delay > 0 then want = now - g.ago + g.delay end
      next = schedule(h, g.kind, want, now)
    end
    for _, t in ipairs(g.ts) do out[t] = next end
  end
end

-- finish_one ends one turn that is not plain (see finishScript for its arguments) and
-- returns the host's next start (ms, Redis clock; 0 when it may start now).
local function finish_one(host, lease, ago, took, outcome, retry, auto, requeue, band, wait, delay_known, conc, rule_arg, now)
  local st = state(host)
  local kind = 'gt'
  if lease ~= '' and conc == 1 then
    local at = zscore(S.sched, host)
    if at and tonumber(at) == lease_end(lease) then kind = 'one' else kind = 'stale' end
  elseif lease ~= '' then
    zflush(S.leases)
    if redis.call('ZREM', S.leases, host .. '|' .. lease) == 1 then
      st.f = math.max(st.f - 1, 0)
      hset(st, 'f', st.f)
    end
  end
  if took >= 0 and auto == '1' then
    st.a = math.floor(((st.a or took) + took) / 2)
    hset(st, 'a', st.a)
  end
  local _, delay = rule(st)
  delay = math.max(delay, delay_known)
  local want = 0
  if ago >= 0 and delay > 0 then want = now - ago + delay end
  if outcome == 'slow' then
    local level = redis.call('HINCRBY', S.backoff, host, 1)
    local backoff = math.min(1000 * 2 ^ (math.min(level, 30) - 1), ` + maxBackoffMs + `)
    want = math.max(want, now + math.max(backoff, retry))
  elseif outcome == 'done' then
    local level = redis.call('HGET', S.backoff, host)
    if level then decay(host, tonumber(level), 1) end
  end
  local before = best_band(st)
  if requeue ~= '' then
    activate(host, st, rule_arg)
    enqueue(host, st, band, {whole(requeue)})
    want = math.max(want, now + wait)
  end
  if kind == 'stale' then
    -- A late finish of a lease that ended: the host is someone else's now.
    if requeue ~= '' then wake(host, st, band, before) end
    return 0
  end
  if kind == 'one' or want > now then return schedule(host, kind, want, now) end
  local at = zscore(S.sched, host)
  if at then return tonumber(at) end
  if requeue ~= '' then
    wake(host, st, band, before)
  elseif not zscore(S.ready, host) then
    place(host, st)
  end
  return 0
end
`

// errShortReply is a script reply without the results it owes (one per turn of a
// finish, two of a dispatch).
var errShortReply = errors.New("frontier: a script gave a short reply")

// finishFields is how many ARGV entries one turn takes in finishScript.
const finishFields = 14

// finishScript ends many fetchers' turns at hosts of one partition (see finishLua), in
// the order given, then, when the window is above 0, makes hosts whose time has come
// ready and hands requests of the ready hosts out to the requests stream as the
// dispatcher would (see hostSchedLua), keeping its unread backlog within the window: a
// freed slot is used at once instead of at the dispatcher's next round, and a page
// costs one script call per batch instead of its own.
//
// KEYS[1..9], ARGV[1..10] -> schedKeys, schedArgs (see hostSchedLua)
// ARGV[11] -> most requests to move, then per turn 14 fields: host, lease, ago (ms
// since the request ended; -1: no request was made), took (ms the request took; -1),
// outcome ('done', 'slow', 'none'), Retry-After ms, autothrottle ('1'), requeue (its
// payload; empty: none), band, wait ms, delay ms (the host's delay as the caller knows
// it: its rule's or its Crawl-delay), the host's concurrency, its rule (for a requeue)
// and the owner (Finish.Owner: a turn whose entry is not pending with it is skipped)
// Output: each turn's next start (ms, Redis clock; 0 when it may start now), then the
// number of requests handed out
var finishScript = schedScript("", finishLua+`
local now = now_ms()
local out = {}
local nt = (#ARGV - 11) / 14
-- A turn whose request's entry is no longer its fetcher's (taken over while that one
-- slept) counts for nothing: the slot and the request are the new holder's.
for t = 1, nt do
  local i = 12 + (t - 1) * 14
  local lease, owner = ARGV[i + 1], ARGV[i + 13]
  if lease ~= '' and owner ~= '' then
    -- pcall: with the stream or its group gone (a FLUSHALL, a reset) nothing is held.
    local p = redis.pcall('XPENDING', S.stream, S.group, lease, lease, 1)
    if p.err or #p == 0 or p[1][2] ~= owner then out[t] = 0; count('finishes_not_held', 1) end
  end
end
-- Plain turns (done, no AutoThrottle, no requeue) first, together; then the others one
-- by one, in order.
local plain = {}
for t = 1, nt do
  local i = 12 + (t - 1) * 14
  if not out[t] and ARGV[i + 4] == 'done' and ARGV[i + 6] ~= '1' and ARGV[i + 7] == '' then
    plain[#plain + 1] = {t = t, host = ARGV[i], lease = ARGV[i + 1], ago = tonumber(ARGV[i + 2]),
      delay = tonumber(ARGV[i + 10]), conc = tonumber(ARGV[i + 11])}
  end
end
if #plain > 0 then finish_plain(plain, now, out) end
for t = 1, nt do
  local i = 12 + (t - 1) * 14
  if not out[t] then
    out[t] = finish_one(ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3]), ARGV[i + 4],
      tonumber(ARGV[i + 5]), ARGV[i + 6], ARGV[i + 7], tonumber(ARGV[i + 8]), tonumber(ARGV[i + 9]),
      tonumber(ARGV[i + 10]), tonumber(ARGV[i + 11]), ARGV[i + 12], now)
  end
end
local moved = 0
if S.window > 0 then
  promote(now, 256)
  zflush(S.ready)
  if redis.call('ZCARD', S.ready) > 0 then
    local r = room(tonumber(ARGV[11]))
    if r > 0 then moved = hand_out(r, now) end
  end
end
commit()
out[#out + 1] = moved
return out
`)

// finishJob is one Finish waiting for its batch.
type finishJob struct {
	part int
	host string
	f    Finish
	next int64 // the host's next start (ms), as the script returned it
	err  error
}

// finishTurns runs a batch of Finish calls of many fetchers (gathered by the group commit
// of the Frontier, waiting up to WriteLinger for company as the other writers do): one
// script call per partition, all in one pipeline.
func (f *Frontier) finishTurns(ctx context.Context, batch []*finishJob) {
	byPart := map[int][]*finishJob{}
	var parts []int
	for _, j := range batch {
		if _, ok := byPart[j.part]; !ok {
			parts = append(parts, j.part)
		}
		byPart[j.part] = append(byPart[j.part], j)
	}
	calls := make([]*rkit.Call, len(parts))
	for i, p := range parts {
		keys, args := f.finishCall(p, byPart[p])
		calls[i] = &rkit.Call{Script: finishScript, Keys: keys, Args: args}
	}
	rkit.Exec(ctx, f.rdb, calls)
	for i, p := range parts {
		settle(byPart[p], calls[i].Reply.(*redis.Cmd))
	}
}

// settle hands each job of one script call its result.
func settle(jobs []*finishJob, cmd *redis.Cmd) {
	res, err := cmd.Int64Slice()
	if err == nil && len(res) != len(jobs)+1 {
		err = errShortReply
	}
	for i, j := range jobs {
		if err != nil {
			j.err = err
		} else {
			j.next = res[i]
		}
	}
}

// finishCall returns the keys and arguments of finishScript for jobs of partition part.
// The time since each request ended is taken now, when the call leaves for Redis.
func (f *Frontier) finishCall(part int, jobs []*finishJob) ([]string, []any) {
	keys := schedKeys(f.layout.Parts[part])
	window := 0
	if f.cfg.FinishHandsOut {
		window = f.cfg.Window
	}
	args := make([]any, 0, schedHead+1+finishFields*len(jobs))
	args = append(args, schedArgs(f.hosts, partIDPrefix(part), window, f.cfg.CountUnread, f.order.sign(), maxHandOut)...)
	now := time.Now()
	for _, j := range jobs {
		fin := j.f
		ago, took, outcome := int64(-1), int64(-1), "none"
		if !fin.Started.IsZero() {
			ago, took, outcome = max(now.Sub(fin.Ended).Milliseconds(), 0), max(fin.Ended.Sub(fin.Started).Milliseconds(), 0), "done"
		}
		if fin.SlowDown {
			outcome = "slow"
		}
		auto := 0
		if fin.Autothrottle {
			auto = 1
		}
		rule, ruleArg := f.ruleOf(j.host)
		requeue := ""
		if fin.Requeue != nil {
			requeue = string(fin.Requeue)
		}
		args = append(args, j.host, fin.Lease, ago, took, outcome, max(fin.RetryAfter.Milliseconds(), 0), auto,
			requeue, f.order.band(fin.Priority, fin.Depth), max(fin.Wait.Milliseconds(), 0),
			max(rule.Delay, fin.CrawlDelay).Milliseconds(), max(rule.Concurrency, 0), ruleArg, fin.Owner)
	}
	return keys, args
}

// ruleOf returns the politeness of host as this frontier knows it (its limit rule, or
// the defaults) and the rule as the scripts take it ("" for the defaults).
func (f *Frontier) ruleOf(host string) (HostRule, string) {
	if f.cfg.Rules != nil {
		if r := f.cfg.Rules(host); r != nil {
			return *r, r.arg()
		}
	}
	return f.hosts.HostRule, ""
}
