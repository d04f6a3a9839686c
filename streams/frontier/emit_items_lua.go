package frontier

// emitItemArgs is the number of script arguments per item: key, payload, message ID,
// record, expected record, records hash.
const emitItemArgs = 6

// emitItemsLua is the part of the emit script (emitBody) that appends a page's items to
// the items stream. A plain item (no record): one whose key was recorded before is
// dropped ('d'), the others are added ('a') and their keys recorded in the key set
// after the XADDs, so that a script cut short (OOM) never leaves a key recorded without
// its item; keys are kept by the crawl's dedup snippet (item_has_all, item_add_all:
// dedup.LuaItemKeys). A versioned item (a record, in the records hash named beside it): added
// ('a') and its record stored after its XADD when the key's record is still the one
// the caller read (the expected record); when it is not, dropped as unchanged ('u')
// if the stored record holds the same field hashes (another page emitted the same
// values meanwhile), else refused ('r': the caller reads the record again and makes a
// new version), so two pages racing on one key never lose or repeat a version.
const emitItemsLua = `
local is = 6 -- emitItemArgs
if m > 0 then
  local keyed = {}
  for i = items, items + is * m - 1, is do
    if ARGV[i] ~= '' and ARGV[i + 3] == '' then keyed[#keyed + 1] = ARGV[i] end
  end
  local known, fresh_keys = {}, {}
  if #keyed > 0 then
    for j, yes in ipairs(item_has_all(KEYS[14], keyed, item_set)) do
      if yes then known[keyed[j]] = true end
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
    elseif key ~= '' and known[key] then
      out[#out + 1] = 'd'
    else
      if key ~= '' then
        known[key] = true -- the same key twice in this call
        fresh_keys[#fresh_keys + 1] = key
      end
      xadd_msg(KEYS[13], ARGV[i + 2], ARGV[i + 1])
      out[#out + 1] = 'a'
      added = added + 1
    end
  end
  -- After the XADDs: were the script cut short (OOM), no key is recorded without its item.
  if #fresh_keys > 0 then item_add_all(KEYS[14], fresh_keys, item_set) end
  count('items', added)
end
`
