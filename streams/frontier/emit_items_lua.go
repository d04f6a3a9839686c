package frontier

// emitItemsLua is the part of the emit script (emitBody) that appends a page's items to
// the items stream: an item whose key was recorded before is dropped ('d'), the others
// are added ('a') and their keys recorded after the XADDs, so that a script cut short
// (OOM) never leaves a key recorded without its item. Keys are kept by the crawl's
// dedup snippet (item_has_all, item_add_all: dedup.LuaItemKeys).
const emitItemsLua = `
if m > 0 then
  local keyed = {}
  for i = items, items + 3 * m - 1, 3 do
    if ARGV[i] ~= '' then keyed[#keyed + 1] = ARGV[i] end
  end
  local known, fresh_keys = {}, {}
  if #keyed > 0 then
    for j, yes in ipairs(item_has_all(KEYS[14], keyed, item_set)) do
      if yes then known[keyed[j]] = true end
    end
  end
  local added = 0
  for i = items, items + 3 * m - 1, 3 do
    local key = ARGV[i]
    if key ~= '' and known[key] then
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
