package frontier

import (
	"context"
	"fmt"

	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"
)

// dropHostScript moves up to most requests waiting in one host's queue to the
// partition's dead letters, each as the requests-stream entry it would have become
// (so that a dead retry puts it on the requests stream), with the stage and error
// given; once the queue is empty the host leaves the ready set. A host whose
// robots.txt stayed unreachable is dropped so: its requests would otherwise wait
// forever, and the crawl with them.
//
// KEYS[1..8], ARGV[1..8] -> schedKeys, schedArgs (see hostSchedLua)
// KEYS[9] -> sc:{c}:dead
// ARGV[9] -> host (its key), ARGV[10] -> stage, ARGV[11] -> error, ARGV[12] -> most
// Output: {requests dropped, queue members removed (members whose payload is gone
// count here only)}
var dropHostScript = schedScript("", `
local host, most = ARGV[9], tonumber(ARGV[12])
local q = S.hq .. host
local ids = redis.call('ZRANGE', q, 0, most - 1)
local n = 0
if #ids > 0 then
  local payloads = redis.call('HMGET', S.waiting, unpack(ids))
  for i, id in ipairs(ids) do
    if payloads[i] then
      redis.call('XADD', KEYS[9], '*', '`+rkit.DeadStream+`', S.stream, '`+rkit.DeadStage+`', ARGV[10],
        '`+rkit.DeadError+`', ARGV[11], '`+rkit.DeadDeliveries+`', '0',
        '_watermill_message_uuid', S.idp .. 'x' .. id, 'metadata', '', 'payload', payloads[i])
      n = n + 1
    end
  end
  redis.call('ZREM', q, unpack(ids))
  redis.call('HDEL', S.waiting, unpack(ids))
end
if redis.call('EXISTS', q) == 0 then redis.call('ZREM', S.ready, host) end
return {n, #ids}
`)

// DropHost moves every request waiting in host's queue (host: its key) to the crawl's
// dead letters with stage and errText, maxHandOut per script call so that none holds
// Redis up for long, and returns how many it moved. Requests of the host that are not in
// its queue (handed out, waiting for a retry, found later) are not touched: their
// fetchers drop them as they come.
func (f *Frontier) DropHost(ctx context.Context, host, stage, errText string) (int, error) {
	p := f.layout.PartitionOf(host)
	k := f.layout.Parts[p]
	keys := schedKeys(k, k.Dead)
	total := 0
	for {
		args := schedArgs(f.hosts, partIDPrefix(p), 0, false, host, stage, errText, maxHandOut)
		out, err := dropHostScript.Run(ctx, f.rdb, keys, args...).Int64Slice()
		if err == nil && len(out) != 2 {
			err = errShortReply
		}
		if err != nil {
			return total, fmt.Errorf("frontier: drop the requests of host %s: %w", host, err)
		}
		total += int(out[0])
		if out[1] < maxHandOut {
			return total, nil
		}
	}
}
