-- Starts the run of a scheduled crawl for a tick, once whatever the number of workers
-- asking (see Registry.StartRun).
-- KEYS: the generation counter, the crawl's hash.
-- ARGV: the tick (Unix ms), now (ms).
local f = redis.call('HMGET', KEYS[2], 'state', 'last_tick', 'schedule')
local state, last = f[1], tonumber(f[2] or '0') or 0
if not state or f[3] == false or f[3] == '' then
  return 0
end
if state ~= 'scheduled' and state ~= 'done' and state ~= 'failed' then
  return 0 -- a run still going (or paused, cancelled, being deleted) is not started twice
end
if last >= tonumber(ARGV[1]) then
  return 0 -- this tick's run was started already
end
redis.call('HSET', KEYS[2], 'state', 'resetting', 'last_tick', ARGV[1], 'changed_at', ARGV[2])
redis.call('INCR', KEYS[1])
return 1
