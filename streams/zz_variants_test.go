package streams

import "strings"

func init() {
	variants["set"] = func() string { return luaSet }
	variants["exact12"] = func() string { return luaExact(12) }
	variants["exact12full"] = func() string { return strings.Replace(luaExact(12), "string.sub(fp, sd_drop + 1)", "fp", 1) }
	variants["exact12bin"] = func() string {
		return `
local function sd_where(base, fp)
  if #fp ~= 16 then return base .. ':x', fp end
  local a, b = string.byte(fp, 1, 2)
  return base .. ':' .. string.char(a, math.floor(b / 16)), string.sub(fp, 2)
end
local function seen_add(base, fp)
  local key, field = sd_where(base, fp)
  return redis.call('HSETNX', key, field, '')
end
`
	}
	variants["bloom2"] = func() string {
		s := luaBloom(bloomLevels(200000, 0.01))
		s = strings.Replace(s, "local args, n = {}, 0", "local args, n = sd_args, 0", 1)
		s = strings.Replace(s, "local sd_n, sd_c", "local sd_n, sd_c\nlocal sd_args = {}", 1)
		s = strings.Replace(s, "'SET', 'u1', pos, 1", "'SET', 'u1', pos, '1'", 1)
		s = strings.Replace(s, "unpack(args)", "unpack(args, 1, n)", 1)
		s = strings.Replace(s, "redis.call('HSET', base .. ':bloom', 'c', sd_c)", "redis.call('HINCRBY', base .. ':bloom', 'c', '1')", 1)
		return s
	}
	variants["b_lua"] = func() string {
		s := variants["bloom2"]()
		s = strings.Replace(s, "local old = redis.call(write and 'BITFIELD' or 'BITFIELD_RO', base .. ':bloom:' .. i .. ':' .. (h3 % l[2]), unpack(args, 1, n))", "local old = {0}", 1)
		s = strings.Replace(s, "redis.call('HINCRBY', base .. ':bloom', 'c', '1')", "", 1)
		return s
	}
	variants["b_bf"] = func() string {
		s := variants["bloom2"]()
		s = strings.Replace(s, "redis.call('HINCRBY', base .. ':bloom', 'c', '1')", "", 1)
		return s
	}
	variants["b_bfk1"] = func() string {
		s := variants["bloom2"]()
		s = strings.Replace(s, "unpack(args, 1, n)", "unpack(args, 1, 4)", 1)
		s = strings.Replace(s, "redis.call('HINCRBY', base .. ':bloom', 'c', '1')", "", 1)
		s = strings.Replace(s, "for j = 1, k do\n    if old", "for j = 1, 1 do\n    if old", 1)
		return s
	}
	variants["blocked"] = func() string {
		return `
local sd_blocks, sd_k = 2048, 7
local sd_pow = {[0]=1,2,4,8,16,32,64,128}
local sd_init
local function seen_add(base, fp)
  local key = base .. ':blk'
  if not sd_init then redis.call('SETBIT', key, sd_blocks * 1024 - 1, 0); sd_init = true end
  local b1, b2, b3, b4, b5, b6, b7, b8 = string.byte(fp, 1, 8)
  local off = ((((b1 * 256 + b2) * 256 + b3) * 256 + b4) % sd_blocks) * 128
  local block = redis.call('GETRANGE', key, off, off + 127)
  local a, s = (b5 * 256 + b6) % 1024, (b7 * 256 + b8) % 1024
  if s % 2 == 0 then s = s + 1 end
  local bytes = {string.byte(block, 1, 128)}
  local new = false
  for j = 1, sd_k do
    local i, mask = math.floor(a / 8) + 1, sd_pow[a % 8]
    local v = bytes[i]
    if v % (mask + mask) < mask then bytes[i] = v + mask; new = true end
    a = a + s
    if a >= 1024 then a = a - 1024 end
  end
  if not new then return 0 end
  redis.call('SETRANGE', key, off, string.char(unpack(bytes, 1, 128)))
  redis.call('HINCRBY', base .. ':bloom', 'c', '1')
  return 1
end
`
	}
}
