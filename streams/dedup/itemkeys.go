package dedup

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Item keys: the emit script (package frontier) records the key fingerprint of every
// item it appends, so that an item two pages yield goes on the items stream once.
// A crawl of N items keeps N keys for its life, so they are kept as compactly as the
// request fingerprints: in exact mode in the same bucketed hashes (2^BucketBits of
// them beside the base key, named base:<bucket>), else in one set. Measured at 1M
// pages of the demo shop (833k items): the plain set held 60 MB, 72 bytes per key.
//
// A crawl begun before item keys went into buckets has its keys in the set at base:
// the caller says so (the functions' third argument, true: use the set; see
// ItemKeysInSet), so such a crawl never re-emits an item it has stored.

// LuaItemSet is the item-key snippet that keeps keys in the set base itself (the
// frontier's without a Deduper, and the non-exact modes'); it ignores the functions'
// third argument.
const LuaItemSet = `
local function item_add_new(base, keys)
  local out = {}
  for i = 1, #keys, 1000 do
    local part = {unpack(keys, i, math.min(i + 999, #keys))}
    for _, r in ipairs(redis.call('SMISMEMBER', base, unpack(part))) do out[#out + 1] = r == 0 end
    redis.call('SADD', base, unpack(part))
  end
  return out
end
`

// luaItemBuckets keeps item keys in buckets beside base, placed by luaExact's sd_where
// (the exact-mode seen snippet it follows): one HSETNX per key both records it and says
// whether it was new. With true as the third argument (a legacy crawl, see above) the
// keys are in the set at base.
const luaItemBuckets = LuaItemSet + `
local item_add_new_set = item_add_new
item_add_new = function(base, keys, set)
  if set then return item_add_new_set(base, keys) end
  local out = {}
  for j = 1, #keys do
    local key, field = sd_where(base, keys[j])
    out[j] = redis.call('HSETNX', key, field, '') == 1
  end
  return out
end
`

// ItemKeysInSet reports whether the item keys at base are a set (a crawl begun before
// they went into buckets, or a mode that keeps them in a set), to tell the item
// functions of Deduper.Lua. Its answer for one crawl never changes while the crawl
// lives, so a process asks once per partition.
func ItemKeysInSet(ctx context.Context, rdb redis.Cmdable, base string) (bool, error) {
	n, err := rdb.Exists(ctx, base).Result()
	if err != nil {
		return false, fmt.Errorf("dedup: item keys %s: %w", base, err)
	}
	return n == 1, nil
}
