package frontier

// Lua fragments that several scripts share, each defined once here and prepended to
// the scripts that use them. A fragment defines local functions only; it touches no
// key until a script calls it with the keys it was given.

// nowLua defines now_ms(): the Redis server's clock in milliseconds. Every time the
// frontier compares (host schedules, leases, revisits) is on this clock, so fetchers on
// machines with skewed clocks still agree.
//
// Output: milliseconds since the Unix epoch
const nowLua = `
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`

// xaddLua defines xadd_msg(): append a Watermill message to a stream in
// watermill-redisstream's wire format (fields _watermill_message_uuid, metadata,
// payload; no metadata).
//
// stream -> the stream key, uuid -> the message UUID, payload -> the payload
// Output: the new entry's ID
const xaddLua = `
local function xadd_msg(stream, uuid, payload)
  return redis.call('XADD', stream, '*', '_watermill_message_uuid', uuid, 'metadata', '', 'payload', payload)
end
`

// groupsLua defines groups_of(): a stream's consumer groups as XINFO GROUPS gives
// them, each a table of its fields (name, pending, last-delivered-id, lag, ...).
//
// stream -> the stream key
// Output: the list of groups, or nil when the stream does not exist
const groupsLua = `
local function groups_of(stream)
  local groups = redis.pcall('XINFO', 'GROUPS', stream)
  if groups['err'] then return nil end
  local out = {}
  for _, g in ipairs(groups) do
    local f = {}
    for j = 1, #g, 2 do f[g[j]] = g[j + 1] end
    out[#out + 1] = f
  end
  return out
end
`

// unreadLua (after groupsLua) defines unread(): how many entries of a stream a group
// has not read yet (at most window when counted). The dispatch and emit scripts keep
// the requests stream's unread backlog within the window with it.
//
// stream -> the stream key, group -> the group, window -> the most worth counting,
// mode -> 'lag' (trust XINFO GROUPS' lag) or 'range' (count with XRANGE, for Redis
// servers whose lag is unreliable, like the embedded one)
// Output: the number of unread entries (all of them when the group does not exist
// yet; 0 when the stream does not)
const unreadLua = groupsLua + `
local function unread(stream, group, window, mode)
  local groups = groups_of(stream)
  if groups == nil then return 0 end -- no stream yet
  for _, f in ipairs(groups) do
    if f['name'] == group then
      if mode == 'lag' and f['lag'] then return tonumber(f['lag']) end
      return #redis.call('XRANGE', stream, '(' .. f['last-delivered-id'], '+', 'COUNT', window)
    end
  end
  return redis.call('XLEN', stream)
end
`

// newerLua defines newer(): whether stream ID a comes after stream ID b.
//
// a, b -> stream IDs ("<ms>-<seq>")
// Output: true when a > b
const newerLua = `
local function newer(a, b)
  local am, as = string.match(a, '(%d+)-(%d+)')
  local bm, bs = string.match(b, '(%d+)-(%d+)')
  am, as, bm, bs = tonumber(am), tonumber(as), tonumber(bm), tonumber(bs)
  return am > bm or (am == bm and as > bs)
end
`
