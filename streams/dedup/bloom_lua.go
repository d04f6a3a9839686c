package dedup

import (
	"fmt"
	"strings"
)

// luaBloom is the bloom-mode snippet for a chain of filters.
func luaBloom(levels []bloomLevel) string {
	var b strings.Builder
	b.WriteString("\nlocal sd_levels = {")
	for i, l := range levels {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "{%d,%d,%d,%d}", l.Cap, l.Parts, l.bits(), l.K)
	}
	b.WriteString("}\n")
	b.WriteString(`local sd_n, sd_c, sd_state, sd_base
local sd_keys = {}
-- sd_load makes base's filter chain the current one: its state is read from Redis
-- once per script run and kept in sd_saved while another base (an expiry generation,
-- see expire.go) is current.
local sd_saved = {}
local function sd_load(base)
  if base == sd_base then return end
  if sd_base then sd_saved[sd_base] = {sd_n, sd_c, sd_keys} end
  sd_base, sd_state = base, base .. ':bloom'
  local s = sd_saved[base]
  if s then
    sd_n, sd_c, sd_keys = s[1], s[2], s[3]
  else
    s = redis.call('HMGET', sd_state, 'n', 'c')
    sd_n, sd_c, sd_keys = tonumber(s[1]) or 0, tonumber(s[2]) or 0, {}
  end
end
local function sd_key(base, i, p)
  local ks = sd_keys[i]
  if not ks then
    ks = {}
    sd_keys[i] = ks
  end
  local k = ks[p]
  if not k then
    k = base .. ':bloom:' .. i .. ':' .. p
    ks[p] = k
  end
  return k
end
local function sd_grow(base)
  local l = sd_levels[sd_n + 1]
  if not l then error('dedup: bloom filter has grown past its last filter') end
  for p = 0, l[2] - 1 do
    redis.call('SETBIT', sd_key(base, sd_n, p), l[3] - 1, 0)
  end
  sd_n, sd_c = sd_n + 1, 0
  redis.call('HSET', sd_state, 'n', sd_n, 'c', 0)
end
local function sd_hash(fp)
  if #fp ~= 16 then
    local h = redis.sha1hex(fp)
    return tonumber(string.sub(h, 1, 12), 16), tonumber(string.sub(h, 13, 24), 16), tonumber(string.sub(h, 25, 32), 16)
  end
  local b1, b2, b3, b4, b5, b6, b7, b8, b9, b10, b11, b12, b13, b14, b15, b16 = string.byte(fp, 1, 16)
  return ((((b1 * 256 + b2) * 256 + b3) * 256 + b4) * 256 + b5) * 256 + b6,
    ((((b7 * 256 + b8) * 256 + b9) * 256 + b10) * 256 + b11) * 256 + b12,
    ((b13 * 256 + b14) * 256 + b15) * 256 + b16
end
-- sd_run sets (write) or reads the k bits of the fingerprints idx[...] (indexes into
-- the hash arrays hs) in filter i, with one BITFIELD per part and at most sd_maxargs
-- arguments per call (Lua's C stack), and returns all[j] = true for those whose bits
-- were all set before. BITFIELD runs its operations in order, so a fingerprint that
-- comes twice finds its own bits the second time.
local sd_maxargs = 6000
local function sd_run(base, i, hs, idx, write)
  local l = sd_levels[i + 1]
  local m, k, parts = l[3], l[4], l[2]
  local cmd, width = 'BITFIELD_RO', 3
  if write then cmd, width = 'BITFIELD', 4 end
  local groups, all = {}, {}
  local h1, h2, h3 = hs[1], hs[2], hs[3]
  local function flush(p, g)
    local old = redis.call(cmd, sd_key(base, i, p), unpack(g.args, 1, g.n))
    for w = 1, #g.who do
      local set = true
      for j = (w - 1) * k + 1, w * k do
        if old[j] == 0 then
          set = false
          break
        end
      end
      all[g.who[w]] = set
    end
    g.n, g.who = 0, {}
  end
  for _, j in ipairs(idx) do
    local p = h3[j] % parts
    local g = groups[p]
    if not g then
      g = {args = {}, n = 0, who = {}}
      groups[p] = g
    end
    if g.n + width * k > sd_maxargs then flush(p, g) end
    local args, n = g.args, g.n
    local pos, step = h1[j] % m, h2[j] % m
    if step % 2 == 0 then step = step + 1 end
    for _ = 1, k do
      if write then
        args[n + 1], args[n + 2], args[n + 3], args[n + 4] = 'SET', 'u1', pos, '1'
      else
        args[n + 1], args[n + 2], args[n + 3] = 'GET', 'u1', pos
      end
      n = n + width
      pos = pos + step
      if pos >= m then pos = pos - m end
    end
    g.n = n
    g.who[#g.who + 1] = j
  end
  for p, g in pairs(groups) do
    if g.n > 0 then flush(p, g) end
  end
  return all
end
-- sd_keep returns the entries of idx from index at on whose all[] is not true.
local function sd_keep(idx, at, all)
  local rest = {}
  for x = at, #idx do
    if not all[idx[x]] then rest[#rest + 1] = idx[x] end
  end
  return rest
end
-- sd_prepare returns the output array (all 0), the hashes of fps (three arrays) and
-- the indexes of fps.
local function sd_prepare(fps)
  local out, hs, idx = {}, {{}, {}, {}}, {}
  local h1, h2, h3 = hs[1], hs[2], hs[3]
  for j = 1, #fps do
    out[j], idx[j] = 0, j
    h1[j], h2[j], h3[j] = sd_hash(fps[j])
  end
  return out, hs, idx
end
local function seen_add_all(base, fps)
  sd_load(base)
  if sd_n == 0 then sd_grow(base) end
  local out, hs, todo = sd_prepare(fps)
  for i = 0, sd_n - 2 do -- full filters: seen there means seen
    if #todo == 0 then break end
    todo = sd_keep(todo, 1, sd_run(base, i, hs, todo, false))
  end
  local at = 1
  while at <= #todo do
    local cap = sd_levels[sd_n][1]
    if sd_c >= cap then -- full: what it holds is seen, the rest starts the next filter
      todo = sd_keep(todo, at, sd_run(base, sd_n - 1, hs, sd_keep(todo, at, {}), false))
      at = 1
      if #todo == 0 then break end
      sd_grow(base)
      cap = sd_levels[sd_n][1]
    end
    local chunk = {} -- no more than the filter has room for, so it never overfills
    for x = at, math.min(#todo, at + cap - sd_c - 1) do chunk[#chunk + 1] = todo[x] end
    at = at + #chunk
    local all, new = sd_run(base, sd_n - 1, hs, chunk, true), 0
    for _, j in ipairs(chunk) do
      if not all[j] then
        out[j] = 1
        new = new + 1
      end
    end
    if new > 0 then
      sd_c = sd_c + new
      redis.call('HINCRBY', sd_state, 'c', new)
    end
  end
  return out
end
local function seen_has_all(base, fps)
  sd_load(base)
  local out, hs, todo = sd_prepare(fps)
  for i = 0, sd_n - 1 do
    if #todo == 0 then break end
    local all = sd_run(base, i, hs, todo, false)
    for _, j in ipairs(todo) do
      if all[j] then out[j] = 1 end
    end
    todo = sd_keep(todo, 1, all)
  end
  return out
end
-- The one-fingerprint versions do the same without building tables.
local sd_args = {}
-- sd_test sets (write) or reads the k bits of a fingerprint in filter i and returns
-- whether they were all set before.
local function sd_test(base, i, h1, h2, h3, write)
  local l = sd_levels[i + 1]
  local m, k = l[3], l[4]
  local pos, step = h1 % m, h2 % m
  if step % 2 == 0 then step = step + 1 end
  local args, n = sd_args, 0
  for _ = 1, k do
    if write then
      args[n + 1], args[n + 2], args[n + 3], args[n + 4] = 'SET', 'u1', pos, '1'
      n = n + 4
    else
      args[n + 1], args[n + 2], args[n + 3] = 'GET', 'u1', pos
      n = n + 3
    end
    pos = pos + step
    if pos >= m then pos = pos - m end
  end
  local old = redis.call(write and 'BITFIELD' or 'BITFIELD_RO', sd_key(base, i, h3 % l[2]), unpack(args, 1, n))
  for j = 1, k do
    if old[j] == 0 then return false end
  end
  return true
end
local function seen_add(base, fp)
  sd_load(base)
  if sd_n == 0 then sd_grow(base) end
  local h1, h2, h3 = sd_hash(fp)
  for i = 0, sd_n - 2 do
    if sd_test(base, i, h1, h2, h3, false) then return 0 end
  end
  if sd_c >= sd_levels[sd_n][1] then -- full: the next new URL starts the next filter
    if sd_test(base, sd_n - 1, h1, h2, h3, false) then return 0 end
    sd_grow(base)
  end
  if sd_test(base, sd_n - 1, h1, h2, h3, true) then return 0 end
  sd_c = sd_c + 1
  redis.call('HINCRBY', sd_state, 'c', '1')
  return 1
end
local function seen_has(base, fp)
  sd_load(base)
  local h1, h2, h3 = sd_hash(fp)
  for i = 0, sd_n - 1 do
    if sd_test(base, i, h1, h2, h3, false) then return 1 end
  end
  return 0
end
`)
	return b.String()
}
