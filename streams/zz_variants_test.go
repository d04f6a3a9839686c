package streams

const eachBody = `
local out = {}
for i = 1, #ARGV do out[i] = seen_add(KEYS[1], ARGV[i]) end
return out
`

const blk = `
local sd_blocks, sd_k = 4096, 7
local band, bor, lshift, rshift = bit.band, bit.bor, bit.lshift, bit.rshift
local sd_init
local function seen_add(base, fp)
  local key = base .. ':blk'
  if not sd_init then redis.call('SETBIT', key, sd_blocks * 512 - 1, 0); sd_init = true end
  local b1, b2, b3, b4, b5, b6, b7, b8 = string.byte(fp, 1, 8)
  local off = ((((b1 * 256 + b2) * 256 + b3) * 256 + b4) % sd_blocks) * 64
  local block = redis.call('GETRANGE', key, off, off + 63)
  local a, s = (b5 * 256 + b6) % 512, (b7 * 256 + b8) % 512
  if s % 2 == 0 then s = s + 1 end
  local t
  for j = 1, sd_k do
    local i, mask = rshift(a, 3) + 1, lshift(1, band(a, 7))
    if t then
      t[i] = bor(t[i], mask)
    elseif band(string.byte(block, i), mask) == 0 then
      t = {string.byte(block, 1, 64)}
      t[i] = bor(t[i], mask)
    end
    a = a + s
    if a >= 512 then a = a - 512 end
  end
  if not t then return 0 end
  redis.call('SETRANGE', key, off, string.char(unpack(t, 1, 64)))
  return 1
end
`

func init() {
	variants["set"] = func() string { return luaSet + luaEach + seenAddBody }
	variants["exact"] = func() string { return luaExact(11) + luaEach + seenAddBody }
	variants["bloom_all"] = func() string { return luaBloom(bloomLevels(200000, 0.01)) + seenAddBody }
	variants["bloom_each"] = func() string { return luaBloom(bloomLevels(200000, 0.01)) + eachBody }
	variants["blk64"] = func() string { return blk + eachBody }
}
