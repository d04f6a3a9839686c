package dedup

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"
)

// Expiry (Config.ExpireAfter) keeps the seen set in generations: generation g holds
// the fingerprints first recorded while floor(now / period) was g, period being
// ExpireAfter/expireGenerations, each generation in the mode's own layout (buckets or
// a Bloom filter chain) under the base sc:{c}:seen:g<g>. A fingerprint is seen while it
// is in the current generation or one of the expireGenerations before it, so one
// recorded at time t is new again from the end of generation
// floor(t/period)+expireGenerations on: between ExpireAfter and
// ExpireAfter*(1+1/expireGenerations) after t, never earlier. A fingerprint seen again
// is not recorded again (its age counts from when it was first recorded). Each
// partition lists the generations it wrote in a sorted set (gensKey); DropExpired
// deletes those no check reads any more, each as a whole.
//
// Per URL the bytes are those of the mode (a URL is in one generation); per check a
// new fingerprint costs expireGenerations+1 lookups instead of one (a seen one stops
// at the generation that has it), and exact mode gives up its pre-split script
// argument. Bloom mode sizes each generation's filters for Capacity/expireGenerations
// URLs at ErrorRate/(expireGenerations+1), so that the checks of all generations
// together keep the crawl's ErrorRate (about 3.4 bits more per URL than without
// expiry), and always uses the Lua filter (RedisBloom's BF.ADD would create each
// generation's filter with its own defaults).

// expireGenerations is how many past generations a fingerprint stays seen in, besides
// the current one.
const expireGenerations = 4

// minExpireAfter is the shortest ExpireAfter.
const minExpireAfter = time.Minute

// expirePeriod is the time one generation covers.
func (r record) expirePeriod() time.Duration { return r.ExpireAfter / expireGenerations }

// luaExpire follows the mode's snippet when fingerprints expire: it keeps the mode's
// functions for one generation (sd_g_add, sd_g_has) and defines seen_add, seen_has,
// their batch forms and seen_add_arg over the generations (see Expiry above). The
// current generation is read from the Redis clock (TIME), moved by shift ms, once per
// script run. The first fingerprint a run records in a partition adds its generation
// to the partition's gensKey.
func luaExpire(period, shift time.Duration) string {
	return fmt.Sprintf(`
local sd_period, sd_past, sd_shift = %d, %d, %d
local sd_gen_now
local function sd_gen()
  if not sd_gen_now then
    local t = redis.call('TIME')
    sd_gen_now = math.floor((tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + sd_shift) / sd_period)
  end
  return sd_gen_now
end
local sd_g_add, sd_g_has, sd_g_add_all, sd_g_has_all = seen_add, seen_has, seen_add_all, seen_has_all
local sd_listed = {}
local function sd_list(base, g)
  if not sd_listed[base] then
    redis.call('ZADD', base .. ':gens', g, g)
    sd_listed[base] = true
  end
end
seen_has = function(base, fp)
  local g = sd_gen()
  for i = g, g - sd_past, -1 do
    if sd_g_has(base .. ':g' .. i, fp) == 1 then return 1 end
  end
  return 0
end
seen_add = function(base, fp)
  if seen_has(base, fp) == 1 then return 0 end
  local g = sd_gen()
  sd_list(base, g)
  return sd_g_add(base .. ':g' .. g, fp)
end
-- sd_has_gens looks fps up generation by generation, newest first, each generation
-- with the mode's batch function for those not found yet; it returns the output (1 for
-- those found), and the fingerprints not found with their indexes in fps.
local function sd_has_gens(base, fps)
  local out, todo, idx = {}, fps, {}
  for j = 1, #fps do out[j], idx[j] = 0, j end
  local g = sd_gen()
  for i = g, g - sd_past, -1 do
    if #todo == 0 then break end
    local found, rest, ri = sd_g_has_all(base .. ':g' .. i, todo), {}, {}
    for x = 1, #todo do
      if found[x] == 1 then
        out[idx[x]] = 1
      else
        rest[#rest + 1], ri[#ri + 1] = todo[x], idx[x]
      end
    end
    todo, idx = rest, ri
  end
  return out, todo, idx
end
seen_has_all = function(base, fps)
  local out = sd_has_gens(base, fps)
  return out
end
seen_add_all = function(base, fps)
  local out, todo, idx = sd_has_gens(base, fps)
  for j = 1, #out do out[j] = 0 end
  if #todo > 0 then
    local g = sd_gen()
    sd_list(base, g)
    local added = sd_g_add_all(base .. ':g' .. g, todo)
    for x = 1, #todo do out[idx[x]] = added[x] end
  end
  return out
end
seen_add_arg = function(base, fp) return seen_add(base, fp) end
`, period.Milliseconds(), expireGenerations, shift.Milliseconds())
}

// DropExpired deletes, in every partition, the generations of fingerprints that no
// check reads any more (older than the newest written less expireGenerations), each
// as a whole, and returns how many keys it deleted. It does nothing for a crawl whose
// fingerprints do not expire. Frontier.Run calls it every retry round; any number of
// processes may.
func (d *Deduper) DropExpired(ctx context.Context) (int64, error) {
	if d.rec.ExpireAfter <= 0 {
		return 0, nil
	}
	var n int64
	for _, k := range d.layout.Parts {
		gens, err := d.rdb.ZRangeWithScores(ctx, gensKey(k), 0, -1).Result()
		if err != nil {
			return n, fmt.Errorf("dedup: read the seen generations of %s: %w", k.Seen, err)
		}
		if len(gens) == 0 {
			continue
		}
		newest := int64(gens[len(gens)-1].Score)
		for _, g := range gens {
			gen := int64(g.Score)
			if gen >= newest-expireGenerations {
				break
			}
			err := rkit.ScanKeys(ctx, d.rdb, globEscape(genBase(k, gen))+":*", func(keys []string) error {
				deleted, err := d.rdb.Unlink(ctx, keys...).Result()
				n += deleted
				return err
			})
			if err == nil {
				err = d.rdb.ZRem(ctx, gensKey(k), strconv.FormatInt(gen, 10)).Err()
			}
			if err != nil && err != redis.Nil {
				return n, fmt.Errorf("dedup: delete seen generation %d of %s: %w", gen, k.Seen, err)
			}
		}
	}
	return n, nil
}

// Expires reports whether the crawl's fingerprints expire (Config.ExpireAfter as
// stored): a caller must not remember in process that a fingerprint is seen.
func (d *Deduper) Expires() bool { return d.rec.ExpireAfter > 0 }
