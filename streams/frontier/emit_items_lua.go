package frontier

// emitItemArgs is the number of script arguments per item: key, payload, message ID,
// record, expected record, records hash.
const emitItemArgs = 6

// emitItemsLua is the part of the emit script (emitBody) that appends a page's items to
// the items stream. A plain item (no record): one whose key was recorded before is
// dropped ('d'), the others are added ('a') and their keys recorded, one command per
// key (HSETNX in exact mode) by the crawl's dedup snippet (item_add_new:
// dedup.Deduper.Lua). A versioned item (a record, in the records hash named beside it): added
// ('a') and its record stored after its XADD when the key's record is still the one
// the caller read (the expected record); when it is not, dropped as unchanged ('u')
// if the stored record holds the same field hashes (another page emitted the same
// values meanwhile), else refused ('r': the caller reads the record again and makes a
// new version), so two pages racing on one key never lose or repeat a version.
const emitItemsLua = `
local is = emit_item_args
if m > 0 then
  -- The keys of plain items are recorded first, each once, in one command per key
  -- (item_add_new says which were new): Redis denies a script a write for want of
  -- memory only while it has written nothing, and XADD with an automatic ID cannot
  -- fail otherwise, so no key is left recorded without its item.
  local keyed, first = {}, {}
  for i = items, items + is * m - 1, is do
    local key = ARGV[i]
    if key ~= '' and ARGV[i + 3] == '' and first[key] == nil then
      keyed[#keyed + 1] = key
      first[key] = i -- the same key twice in this call: the first is added
    end
  end
  local fresh = {}
  if #keyed > 0 then
    for j, yes in ipairs(item_add_new(KEYS[14], keyed, item_set)) do
      if yes then fresh[keyed[j]] = true end
    end
  end
  -- fields drops a record's version (a uvarint) and keeps its field hashes.
  local function fields(r)
    local k = 1
    while k <= #r and r:byte(k) >= 128 do k = k + 1 end
    return r:sub(k + 1)
  end
  local added = 0
  for i = items, items + is * m - 1, is do
    local key, rec = ARGV[i], ARGV[i + 3]
    if rec ~= '' then
      local cur = redis.call('HGET', ARGV[i + 5], key) or ''
      if cur == ARGV[i + 4] then
        xadd_msg(KEYS[13], ARGV[i + 2], ARGV[i + 1])
        redis.call('HSET', ARGV[i + 5], key, rec)
        out[#out + 1] = 'a'
        added = added + 1
      elseif fields(cur) == fields(rec) then
        out[#out + 1] = 'u'
      else
        out[#out + 1] = 'r'
      end
    elseif key ~= '' and not (fresh[key] and first[key] == i) then
      out[#out + 1] = 'd'
    else
      xadd_msg(KEYS[13], ARGV[i + 2], ARGV[i + 1])
      out[#out + 1] = 'a'
      added = added + 1
    end
  end
  count('items', added)
end
`
