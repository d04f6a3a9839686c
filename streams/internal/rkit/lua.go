package rkit

// Lua fragments that scripts of both streams and streams/frontier share, each defined
// once here and prepended to the scripts that use them. A fragment defines local
// functions only; it touches no key until a script calls it with the keys it was given.

// LuaNow defines now_ms(): the Redis server's clock in milliseconds. Every time the
// crawl compares (host schedules, leases, revisits, retries) is on this clock, so
// processes on machines with skewed clocks still agree.
//
// Output: milliseconds since the Unix epoch
const LuaNow = `
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`

// LuaXAdd defines xadd_msg(): append a Watermill message to a stream in
// watermill-redisstream's wire format (fields _watermill_message_uuid, metadata,
// payload; no metadata).
//
// stream -> the stream key, uuid -> the message UUID, payload -> the payload
// Output: the new entry's ID
const LuaXAdd = `
local function xadd_msg(stream, uuid, payload)
  return redis.call('XADD', stream, '*', '_watermill_message_uuid', uuid, 'metadata', '', 'payload', payload)
end
`

// LuaIDs defines id_less() and id_after() on stream IDs ("<ms>-<seq>"; a bare "<ms>",
// as the embedded Redis keeps a group created at "0", is "<ms>-0").
//
// id_less(a, b) -> true when a comes before b
// id_after(id)  -> the smallest ID after id
const LuaIDs = `
local function id_parse(id)
  local ms, seq = string.match(id, '^(%d+)-?(%d*)$')
  return tonumber(ms), tonumber(seq) or 0
end
local function id_less(a, b)
  local am, as = id_parse(a)
  local bm, bs = id_parse(b)
  return am < bm or (am == bm and as < bs)
end
local function id_after(id)
  local ms, seq = id_parse(id)
  return string.format('%d-%d', ms, seq + 1)
end
`

// LuaGroups defines groups_of(): a stream's consumer groups as XINFO GROUPS gives
// them, each a table of its fields (name, pending, last-delivered-id, lag, ...).
//
// stream -> the stream key
// Output: the list of groups, or nil when the stream does not exist
const LuaGroups = `
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

// LuaUnread (groups_of included) defines unread_of() and unread(): how many entries of
// a stream a group has not read yet (at most window when counted). The dispatch, emit
// and finish scripts keep the requests stream's unread backlog within their window with
// it, and the backlog watch sums it.
//
// unread_of(stream, f, window, mode): f is the group's table from groups_of
// unread(stream, group, window, mode): the group by name; all the stream's entries when
// the group does not exist yet, 0 when the stream does not
//
// mode -> 'lag' (trust XINFO GROUPS' lag when Redis gives one) or 'range' (count with
// XRANGE, for servers whose lag is wrong, like the embedded one, which reports the whole
// stream's length)
// Output: the number of unread entries
const LuaUnread = LuaGroups + `
local function unread_of(stream, f, window, mode)
  if mode == 'lag' and f['lag'] then return tonumber(f['lag']) end
  return #redis.call('XRANGE', stream, '(' .. f['last-delivered-id'], '+', 'COUNT', window)
end
local function unread(stream, group, window, mode)
  local groups = groups_of(stream)
  if groups == nil then return 0 end -- no stream yet
  for _, f in ipairs(groups) do
    if f['name'] == group then return unread_of(stream, f, window, mode) end
  end
  return redis.call('XLEN', stream)
end
`

// UnreadMode is the mode argument of unread() for a server whose lag can be trusted
// (countUnread false) or not.
func UnreadMode(countUnread bool) string {
	if countUnread {
		return "range"
	}
	return "lag"
}
