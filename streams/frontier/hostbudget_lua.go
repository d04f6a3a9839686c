package frontier

import (
	"github.com/redis/go-redis/v9"
)

// budgetTop is how many hosts (or domains) Keys.BudgetTop keeps: the ones that queued
// the most requests under a budget, for status. It is trimmed back to this many once
// it holds twice as many, so a trim is rare and its cost bounded.
const budgetTop = 20

// emitBudgetLua (inside emitBody, after its request and item arguments) checks each new
// request against its host's budget (see HostBudget) and records what the call spent.
// The budget section of ARGV follows the items: mode ('0' none; 'h' the counters are
// the partition's, KEYS[15] and KEYS[16]; 'r' they are crawl-wide and the caller
// reserved an allowance per key for this call), the most requests per key (0: no
// limit), the most body bytes per key (0: no limit), how many keys KEYS[16] keeps
// (budgetTop), the number of entries k, then k
// times: host, its budget key (its registered domain), the key's allowance (mode 'r').
// A host without an entry is its own key.
//
// budget_take(host) reports whether one more request of host fits in its budget, and
// counts it spent when it does, or dropped_budget when it does not; budget_commit adds
// the spent counts to KEYS[15] and refreshes the top hosts in KEYS[16] (mode 'h').
//
// KEYS[15] -> sc:{c}:budget, KEYS[16] -> sc:{c}:budget:top
const emitBudgetLua = `
local BU = {at = items + emit_item_args * m, keyof = {}, left = {}, spent = {}, keys = {}, dropped = 0}
BU.mode, BU.pages, BU.bytes = ARGV[BU.at], tonumber(ARGV[BU.at + 1]), tonumber(ARGV[BU.at + 2])
BU.top = tonumber(ARGV[BU.at + 3])
if BU.mode ~= '0' then
  for j = 0, tonumber(ARGV[BU.at + 4]) - 1 do
    local o = BU.at + 5 + 3 * j
    BU.keyof[ARGV[o]] = ARGV[o + 1]
    if BU.mode == 'r' then BU.left[ARGV[o + 1]] = tonumber(ARGV[o + 2]) end
  end
end
local function budget_take(host)
  if BU.mode == '0' then return true end
  local key = BU.keyof[host] or host
  local left = BU.left[key]
  if left == nil then
    local v = redis.call('HMGET', KEYS[15], key, key .. '|b')
    left = math.huge
    if BU.pages > 0 then left = BU.pages - tonumber(v[1] or '0') end
    if BU.bytes > 0 and tonumber(v[2] or '0') >= BU.bytes then left = 0 end
  end
  if left <= 0 then
    BU.left[key] = left
    BU.dropped = BU.dropped + 1
    return false
  end
  BU.left[key] = left - 1
  if not BU.spent[key] then
    BU.spent[key] = 0
    BU.keys[#BU.keys + 1] = key
  end
  BU.spent[key] = BU.spent[key] + 1
  return true
end
local function budget_commit()
  count('dropped_budget', BU.dropped)
  if BU.mode ~= 'h' or #BU.keys == 0 then return end
  for _, key in ipairs(BU.keys) do
    redis.call('ZADD', KEYS[16], redis.call('HINCRBY', KEYS[15], key, BU.spent[key]), key)
  end
  if redis.call('ZCARD', KEYS[16]) > 2 * BU.top then
    redis.call('ZREMRANGEBYRANK', KEYS[16], 0, -BU.top - 1)
  end
end
`

// budgetReserveScript takes, per budget key, up to the requests an emit call offers
// of it from the crawl-wide budget counters (a crawl partitioned with a budget per
// domain: the hosts of one domain may fall in different partitions, whose scripts
// cannot share a key in a Redis Cluster, so each call reserves its share first, like
// max_pages, and the caller gives back what its call did not queue). A key over its
// bytes gets nothing.
//
// KEYS[1] -> sc:{c}:budget (crawl-wide), KEYS[2] -> sc:{c}:budget:top (crawl-wide)
// ARGV[1] -> most requests per key (0: no limit), ARGV[2] -> most bytes per key (0: no
// limit), ARGV[3] -> how many keys KEYS[2] keeps (budgetTop), then per key: the key,
// the requests offered
// Output: per key, the requests reserved
var budgetReserveScript = redis.NewScript(`
local pages, bytes, top = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local out = {}
for i = 4, #ARGV, 2 do
  local key, n = ARGV[i], tonumber(ARGV[i + 1])
  local v = redis.call('HMGET', KEYS[1], key, key .. '|b')
  local used, take = tonumber(v[1] or '0'), n
  if pages > 0 then take = math.max(0, math.min(n, pages - used)) end
  if bytes > 0 and tonumber(v[2] or '0') >= bytes then take = 0 end
  if take > 0 then redis.call('ZADD', KEYS[2], redis.call('HINCRBY', KEYS[1], key, take), key) end
  out[#out + 1] = take
end
if redis.call('ZCARD', KEYS[2]) > 2 * top then redis.call('ZREMRANGEBYRANK', KEYS[2], 0, -top - 1) end
return out
`)

// budgetGiveBackScript gives back what an emit call reserved (budgetReserveScript) and
// did not queue.
//
// KEYS[1] -> sc:{c}:budget (crawl-wide), KEYS[2] -> sc:{c}:budget:top (crawl-wide)
// ARGV -> per key: the key, the requests to give back
// Output: 0
var budgetGiveBackScript = redis.NewScript(`
for i = 1, #ARGV, 2 do
  local used = redis.call('HINCRBY', KEYS[1], ARGV[i], -tonumber(ARGV[i + 1]))
  redis.call('ZADD', KEYS[2], 'XX', used, ARGV[i])
end
return 0
`)

// budgetBytesScript adds the body bytes of a fetch to its budget key's and reports
// whether the key is now over its bytes.
//
// KEYS[1] -> sc:{c}:budget (the host's partition's, or crawl-wide, as for the emit)
// ARGV[1] -> the budget key, ARGV[2] -> bytes fetched, ARGV[3] -> most bytes
// Output: 1 when over, else 0
var budgetBytesScript = redis.NewScript(`
local used = redis.call('HINCRBY', KEYS[1], ARGV[1] .. '|b', ARGV[2])
if used >= tonumber(ARGV[3]) then return 1 end
return 0
`)
