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
// KEYS[1..9], ARGV[1..10] -> schedKeys, schedArgs (see hostSchedLua)
// KEYS[10] -> sc:{c}:dead
// ARGV[11] -> host (its key), ARGV[12] -> stage, ARGV[13] -> error, ARGV[14] -> most
// Output: {requests dropped, entries taken from the queue}
var dropHostScript = schedScript("", `
local host, most = ARGV[11], tonumber(ARGV[14])
local st = state(host)
local entries = pop(host, st, most)
for _, e in ipairs(entries) do
  redis.call('XADD', KEYS[10], '*', '`+rkit.DeadStream+`', S.stream, '`+rkit.DeadStage+`', ARGV[12],
    '`+rkit.DeadError+`', ARGV[13], '`+rkit.DeadDeliveries+`', '0',
    '_watermill_message_uuid', S.idp .. 'x' .. seq_next(), 'metadata', '', 'payload', expand(host, e))
end
if best_band(st) == nil then
  zrem(S.ready, host)
  if st.f == 0 and not zscore(S.sched, host) then retire(host, st) end
end
commit()
return {#entries, #entries}
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
		args := schedArgs(f.hosts, partIDPrefix(p), 0, false, 1, host, stage, errText, maxHandOut)
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
