-- Registers a crawl, or its next version (see Registry.Submit).
-- KEYS: the SET of crawl names, the generation counter, the crawl's hash.
-- ARGV: name, YAML spider, Go spider name, weight, continuous window (ms), schedule,
-- the state of a new crawl (queued or scheduled), now (ms).
local state = redis.call('HGET', KEYS[3], 'state')
if state == 'deleting' then
  return redis.error_reply('STATE deleting')
end
redis.call('HINCRBY', KEYS[3], 'version', 1)
redis.call('HSET', KEYS[3], 'spider', ARGV[2], 'go', ARGV[3], 'weight', ARGV[4],
  'continuous', ARGV[5], 'schedule', ARGV[6], 'submitted_at', ARGV[8])
-- A new crawl, or one that ended, is queued (scheduled) again, and so is one whose
-- schedule came or went; a running or paused one keeps its state and moves to the new
-- version.
if not state or state == 'done' or state == 'failed' or state == 'cancelled' or
   (state == 'scheduled' and ARGV[7] ~= 'scheduled') or (state == 'queued' and ARGV[7] == 'scheduled') then
  redis.call('HSET', KEYS[3], 'state', ARGV[7], 'changed_at', ARGV[8])
  redis.call('HDEL', KEYS[3], 'last_error')
end
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('INCR', KEYS[2])
return 1
