-- Moves a crawl from one of some states to another (see Registry.Transition).
-- KEYS: the generation counter, the crawl's hash.
-- ARGV: the new state, an error to note (or ''), now (ms), then the states allowed
-- before (none: any).
local state = redis.call('HGET', KEYS[2], 'state')
if not state then
  return redis.error_reply('UNKNOWN crawl')
end
if #ARGV > 3 then
  local ok = false
  for i = 4, #ARGV do
    if ARGV[i] == state then ok = true end
  end
  if not ok then
    return redis.error_reply('STATE ' .. state)
  end
end
if ARGV[2] ~= '' then
  redis.call('HSET', KEYS[2], 'last_error', ARGV[2])
end
if state ~= ARGV[1] then
  redis.call('HSET', KEYS[2], 'state', ARGV[1], 'changed_at', ARGV[3])
  if ARGV[1] == 'running' and state == 'queued' then
    redis.call('HINCRBY', KEYS[2], 'runs', 1)
  end
  redis.call('INCR', KEYS[1])
end
return state
