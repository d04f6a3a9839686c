package frontier

import (
	"context"
	"fmt"

	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"
)

// dropHostScript takes up to most requests waiting in one host's queue out of the
// frontier: moved to the partition's dead letters, each as the requests-stream entry it
// would have become (so that a dead retry puts it on the requests stream), with the
// stage and error given; or, when a counter is given, dropped and counted under it in
// the partition's counters. Once the queue is empty the host leaves the ready set (and
// is retired when nothing of it is in flight or scheduled). A host whose robots.txt
// stayed unreachable is dropped to the dead letters: its requests would otherwise wait
// forever, and the crawl with them; one over its budget is dropped and counted
// (dropped_budget).
//
// KEYS[1..9], ARGV[1..10] -> schedKeys, schedArgs (see hostSchedLua)
// KEYS[10] -> sc:{c}:dead
// ARGV[11] -> host (its key), ARGV[12] -> stage, ARGV[13] -> error, ARGV[14] -> most,
// ARGV[15] -> counter ("": dead letters)
// Output: the requests taken from the queue
var dropHostScript = schedScript("", `
local host, most, counter = ARGV[11], tonumber(ARGV[14]), ARGV[15]
local st = state(host)
local entries = pop(host, st, most)
if counter ~= '' then
  count(counter, #entries)
else
  for _, e in ipairs(entries) do
    redis.call('XADD', KEYS[10], '*', '`+rkit.DeadStream+`', S.stream, '`+rkit.DeadStage+`', ARGV[12],
      '`+rkit.DeadError+`', ARGV[13], '`+rkit.DeadDeliveries+`', '0',
      '_watermill_message_uuid', S.idp .. 'x' .. seq_next(), 'metadata', '', 'payload', expand(host, e))
  end
end
if best_band(st) == nil then
  zrem(S.ready, host)
  if st.f == 0 and not zscore(S.sched, host) then retire(host, st) end
end
commit()
return #entries
`)

// DropHost moves every request waiting in host's queue (host: its key) to the crawl's
// dead letters with stage and errText, maxHandOut per script call so that none holds
// Redis up for long, and returns how many it moved. Requests of the host that are not in
// its queue (handed out, waiting for a retry, found later) are not touched: their
// fetchers drop them as they come.
func (f *Frontier) DropHost(ctx context.Context, host, stage, errText string) (int, error) {
	return f.dropHost(ctx, host, stage, errText, "")
}

// dropHost runs dropHostScript until host's queue is empty and returns how many
// requests it took: to the dead letters (counter ""), or counted under counter.
func (f *Frontier) dropHost(ctx context.Context, host, stage, errText, counter string) (int, error) {
	p := f.layout.PartitionOf(host)
	k := f.layout.Parts[p]
	keys := schedKeys(k, k.Dead)
	total := 0
	for {
		args := schedArgs(f.hosts, partIDPrefix(p), 0, false, 1, host, stage, errText, maxHandOut, counter)
		n, err := dropHostScript.Run(ctx, f.rdb, keys, args...).Int()
		if err != nil {
			return total, fmt.Errorf("frontier: drop the requests of host %s: %w", host, err)
		}
		total += n
		if n < maxHandOut {
			return total, nil
		}
	}
}
