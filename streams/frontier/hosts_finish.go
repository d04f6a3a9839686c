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

// finishOneLua (after hostSchedLua) defines finish_one(): one fetcher's turn at a host
// ends: its slot comes back, the host's next start moves to its delay after the
// request's start (or further for a back-off), a request is requeued when asked, and
// the host is placed again.
//
// host, lease (requests stream ID; empty: none), took (ms since the request started; -1: no
// request was made), outcome ('done', 'slow', 'none'), retry (Retry-After ms), auto ('1'
// feeds AutoThrottle), requeue (request; empty: none), band, sign (order), wait (least ms
// before the next start), now (ms, Redis clock)
// Output: the host's next start (ms, Redis clock; 0 when it may start now)
var finishOneLua = `
-- next_start puts host in the schedule at want when that is later than now (later
-- than any time it has: it leaves the ready set), and returns its next start: want,
-- its time in the schedule, or nil when it may start now.
local function next_start(host, want, now)
  if want > now then
    redis.call('ZREM', S.ready, host)
    redis.call('ZADD', S.sched, 'GT', want, host)
    return want
  end
  local at = redis.call('ZSCORE', S.sched, host)
  if at then return tonumber(at) end
  return nil
end

local function finish_one(host, lease, took, outcome, retry, auto, requeue, band, sign, wait, now)
  if lease ~= '' and redis.call('ZREM', S.leases, host .. '|' .. lease) == 1 then free_slot(host) end
  if took >= 0 and auto == '1' then
    local a = tonumber(redis.call('HGET', S.hosts, host .. ':a') or took)
    redis.call('HSET', S.hosts, host .. ':a', math.floor((a + took) / 2))
  end
  local inflight, conc, delay, level = host_rule(host)
  local want = 0
  if took >= 0 and delay > 0 then want = now - took + delay end
  if outcome == 'slow' then
    level = redis.call('HINCRBY', S.hosts, host .. ':b', 1)
    local backoff = math.min(1000 * 2 ^ (math.min(level, 30) - 1), ` + maxBackoffMs + `)
    want = math.max(want, now + math.max(backoff, retry))
  elseif outcome == 'done' and level > 0 then
    if level <= 1 then redis.call('HDEL', S.hosts, host .. ':b') else redis.call('HINCRBY', S.hosts, host .. ':b', -1) end
  end
  local queued = false
  if requeue ~= '' then
    local seq = redis.call('INCR', S.seq)
    enqueue(host, queue_score(band, seq, sign), seq, requeue)
    want = math.max(want, now + wait)
    queued = true
  end
  local at = next_start(host, want, now)
  if at then return at end
  if queued then
    wake(host, band)
  elseif not redis.call('ZSCORE', S.ready, host) then
    place(host, inflight, conc)
  end
  return 0
end

-- finish_plain is finish_one for n turns at one host that all ended 'done', without
-- AutoThrottle or a requeue, in a few calls whatever n: their leases go in one ZREM,
-- the host's rule is read and the host placed once. leases are their stream IDs ('' for
-- none), took the least ms since one of them started (the latest start).
local function finish_plain(host, leases, took, now)
  local members = {}
  for _, l in ipairs(leases) do
    if l ~= '' then members[#members + 1] = host .. '|' .. l end
  end
  if #members > 0 then
    local freed = redis.call('ZREM', S.leases, unpack(members))
    if freed > 0 and redis.call('HINCRBY', S.hosts, host .. ':f', -freed) <= 0 then redis.call('HDEL', S.hosts, host .. ':f') end
  end
  local inflight, conc, delay, level = host_rule(host)
  if level > 0 then
    if level <= #leases then redis.call('HDEL', S.hosts, host .. ':b') else redis.call('HINCRBY', S.hosts, host .. ':b', -#leases) end
  end
  local want = 0
  if delay > 0 then want = now - took + delay end
  local at = next_start(host, want, now)
  if at then return at end
  if not redis.call('ZSCORE', S.ready, host) then place(host, inflight, conc) end
  return 0
end
`

// errShortReply is a finish script reply without one result per turn.
var errShortReply = errors.New("frontier: finish script gave a short reply")

// finishFields is how many ARGV entries one turn takes in finishScript.
const finishFields = 10

// finishScript ends many fetchers' turns at hosts of one partition (see finish_one), in
// the order given, then, when handOut is above 0, hands requests of the hosts that are
// ready out to the requests stream as the dispatcher would (see hostSchedLua), keeping
// its unread backlog within handOut: a freed slot is used at once instead of at the
// dispatcher's next round, and a page costs one script call per batch instead of its
// own.
//
// KEYS[1..8], ARGV[1..8] -> schedKeys, schedArgs (see hostSchedLua; the window is
// handOut)
// ARGV[9] -> most requests to move, then per turn 10 fields: host, lease, took,
// outcome, Retry-After ms, autothrottle, requeue, band, sign, wait ms (see finish_one)
// Output: each turn's next start (as finish_one), then the number of requests handed out
var finishScript = schedScript("", finishOneLua+`
local now = now_ms()
local out = {}
-- Plain turns (done, no AutoThrottle, no requeue) first, grouped by host; then the
-- others one by one, in order.
local plain, hosts = {}, {}
for i = 10, #ARGV, 10 do
  if ARGV[i + 3] == 'done' and ARGV[i + 5] ~= '1' and ARGV[i + 6] == '' then
    local h = ARGV[i]
    local g = plain[h]
    if not g then
      g = {leases = {}, took = tonumber(ARGV[i + 2]), turns = {}}
      plain[h] = g
      hosts[#hosts + 1] = h
    end
    g.leases[#g.leases + 1] = ARGV[i + 1]
    g.took = math.min(g.took, tonumber(ARGV[i + 2]))
    g.turns[#g.turns + 1] = (i - 10) / 10 + 1
  end
end
for _, h in ipairs(hosts) do
  local g = plain[h]
  local want = finish_plain(h, g.leases, g.took, now)
  for _, t in ipairs(g.turns) do out[t] = want end
end
for i = 10, #ARGV, 10 do
  local t = (i - 10) / 10 + 1
  if not out[t] then
    out[t] = finish_one(ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2]), ARGV[i + 3], tonumber(ARGV[i + 4]),
      ARGV[i + 5], ARGV[i + 6], tonumber(ARGV[i + 7]), tonumber(ARGV[i + 8]), tonumber(ARGV[i + 9]), now)
  end
end
local moved = 0
if S.window > 0 and redis.call('ZCARD', S.ready) > 0 then
  local r = room(tonumber(ARGV[9]))
  if r > 0 then moved = hand_out(r, now) end
end
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
// The time since each request started is taken now, when the call leaves for Redis.
func (f *Frontier) finishCall(part int, jobs []*finishJob) ([]string, []any) {
	keys := schedKeys(f.layout.Parts[part])
	window := 0
	if f.cfg.FinishHandsOut {
		window = f.cfg.Window
	}
	args := make([]any, 0, 9+finishFields*len(jobs))
	args = append(args, schedArgs(f.hosts, partIDPrefix(part), window, f.cfg.CountUnread, maxHandOut)...)
	for _, j := range jobs {
		fin := j.f
		took, outcome := int64(-1), "none"
		if !fin.Started.IsZero() {
			took, outcome = max(time.Since(fin.Started).Milliseconds(), 0), "done"
		}
		if fin.SlowDown {
			outcome = "slow"
		}
		auto := 0
		if fin.Autothrottle {
			auto = 1
		}
		args = append(args, j.host, fin.Lease, took, outcome, max(fin.RetryAfter.Milliseconds(), 0), auto,
			string(fin.Requeue), f.order.band(fin.Priority, fin.Depth), f.order.sign(), max(fin.Wait.Milliseconds(), 0))
	}
	return keys, args
}
