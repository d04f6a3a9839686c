package frontier

// handOutLua (after hostSchedLua) defines how requests leave the frontier: hand_out
// (ready hosts' requests into the requests stream), hand_direct (an idle host's new
// requests, without a trip through its queue), promote (hosts whose time has come) and
// expire_leases (slots of fetchers that died).
const handOutLua = `
-- send appends host's entries to the requests stream and returns their stream IDs.
local function send(host, entries)
  local ids = {}
  for i, e in ipairs(entries) do ids[i] = xadd_msg(S.stream, S.idp .. seq_next(), expand(host, e)) end
  return ids
end

-- after_start sets where host goes after n requests were handed out at now: a host of
-- concurrency 1 stays in the schedule until its lease ends (take_slots) or its finish
-- schedules it from the end of the request; so does, nowhere, any other host with a
-- limit and a delay (one at a time, see one_at_a_time: its finish schedules it); one
-- with a delay and no limit (no lease, so no finish to wait for) goes into the schedule
-- at its delay from now; any other is placed again.
local function after_start(host, st, conc, delay, n, now)
  if n > 0 and conc == 1 then return end
  if delay > 0 and n > 0 then
    if conc == 0 then zadd(S.sched, now + delay, host) end
  else
    place(host, st)
  end
end

-- cap_take caps take, how many requests of host would go out now, by its slots: its
-- free slots, one with a delay, none with a delay while one is in flight
-- (one_at_a_time).
local function cap_take(take, st, conc, delay)
  if conc > 1 then take = math.min(take, conc - st.f) elseif conc == 1 then take = math.min(take, 1) end
  if delay > 0 then
    take = math.min(take, 1)
    if one_at_a_time(st, conc, delay) then take = 0 end
  end
  return take
end

-- hand_direct hands out requests of host that were just found, while it is idle (nothing
-- waiting, in flight or scheduled), straight to the requests stream, as far as room and
-- its free slots allow, skipping the trip through its queue (the common case of a crawl
-- of few hosts with room in the window). reqs is a list of {band, entry, order}; it is
-- sorted when some go out, and the number handed out (the first ones) returned. The
-- caller queues the others, then places the host (after_start).
local function hand_direct(host, st, reqs, room, now)
  local conc, delay = rule(st)
  local take = cap_take(math.min(room, #reqs), st, conc, delay)
  if take <= 0 then return 0 end
  if #reqs > 1 then
    table.sort(reqs, function(a, b)
      if a[1] ~= b[1] then return a[1] < b[1] end
      return a[3] * S.sign < b[3] * S.sign
    end)
  end
  local entries = {}
  for i = 1, take do entries[i] = reqs[i][2] end
  take_slots(host, st, conc, send(host, entries), now)
  return take
end

-- hand_one hands out the next request of ready host h, whose ready score is score,
-- without reading its state, when the score says its concurrency is 1 (see place): its
-- best band is in the score, and it goes into the schedule until its lease ends, as
-- after_start and take_slots do. It returns false when it handed nothing out (the score
-- says otherwise, or the band's list is empty: its mark goes, and the caller goes on as
-- for any host).
local function hand_one(h, score, now)
  local band, one = ready_one(score)
  if not one then return false end
  local e = redis.call('LPOP', S.hq .. h .. '|' .. band)
  if not e then
    qmark(state(h), band, false)
    return false
  end
  count('waiting', -1)
  take_slots(h, nil, 1, send(h, {e}), now)
  B[h] = band
  return true
end

-- hand_out moves up to room requests of ready hosts into the requests stream, best
-- band first, hosts of a band in turn, and returns how many it moved.
local function hand_out(room, now)
  local moved, rounds = 0, 0
  while room > 0 and rounds < 64 do
    rounds = rounds + 1
    zflush(S.ready)
    local got = redis.call('ZRANGE', S.ready, 0, math.min(room, 256) - 1, 'WITHSCORES')
    if #got == 0 then break end
    local hosts = {}
    for i = 1, #got, 2 do hosts[#hosts + 1] = got[i] end
    redis.call('ZREM', S.ready, unpack(hosts))
    for i, h in ipairs(hosts) do
      if room <= 0 then
        zadd(S.ready, got[2 * i], h) -- not reached: back in its place
      elseif not HS[h] and hand_one(h, got[2 * i], now) then
        room, moved = room - 1, moved + 1
      else
        local st = state(h)
        local conc, delay = rule(st)
        local take = cap_take(math.min(room, S.quantum), st, conc, delay)
        local n = 0
        if take > 0 then
          local entries = pop(h, st, take)
          n = #entries
          take_slots(h, st, conc, send(h, entries), now)
        end
        room, moved = room - n, moved + n
        after_start(h, st, conc, delay, n, now)
      end
    end
  end
  return moved
end

-- promote makes up to max hosts whose time has come ready (or leaves them out, when
-- they have nothing waiting or no free slot). A host of concurrency 1 whose band
-- S.bands kept (hand_one) is made ready in it without reading its state.
local function promote(now, max)
  zflush(S.sched)
  local due = redis.call('ZRANGEBYSCORE', S.sched, '-inf', now, 'LIMIT', 0, max)
  if #due == 0 then return 0 end
  redis.call('ZREM', S.sched, unpack(due))
  local kept = redis.call('HMGET', S.bands, unpack(due))
  for i, h in ipairs(due) do
    local band = B[h]
    if band == nil then band = kept[i] end
    if band and not HS[h] then place_one(h, tonumber(band)) else place(h, state(h)) end
  end
  return #due
end

-- expire_leases takes back up to max slots whose fetchers never gave them back (died)
-- and places their hosts again.
local function expire_leases(now, max)
  zflush(S.leases)
  local gone = redis.call('ZRANGEBYSCORE', S.leases, '-inf', now, 'LIMIT', 0, max)
  if #gone == 0 then return 0 end
  redis.call('ZREM', S.leases, unpack(gone))
  for _, l in ipairs(gone) do
    local host = string.match(l, '^(.*)|')
    local st = state(host)
    st.f = math.max(st.f - 1, 0)
    hset(st, 'f', st.f)
    if not zscore(S.ready, host) and not zscore(S.sched, host) then place(host, st) end
  end
  return #gone
end
`
