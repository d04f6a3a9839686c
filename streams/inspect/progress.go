package inspect

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"

	"github.com/redis/go-redis/v9"
)

// progressScript reads, in one atomic step, what every stage of one partition still has
// to do: per stream the group's pending count and whether entries were added after its
// last-delivered ID. Being one script matters: a stage acks its input only after its
// output is in, so an atomic look can never see the work "between" two streams.
//
// KEYS[i] -> stream i, ARGV[i] -> the group that reads it
// KEYS[#ARGV+1] -> sc:{c}:delayed, KEYS[#ARGV+2] -> sc:{c}:counts, KEYS[#ARGV+3] -> sc:{c}:seq,
// KEYS[#ARGV+4] -> sc:{c}:waiting (legacy), KEYS[#ARGV+5] -> sc:{c}:frontier (legacy),
// KEYS[#ARGV+6] -> sc:{c}:rv (the revisit schedule's minutes)
// Output: per stream {length, pending, unread(0/1), the group's last-delivered ID (empty:
// none)}, then the number of delayed requests, the number of requests waiting in host
// queues (a crawl an older version wrote and no process has opened since counts its
// own), a mark of the frontier's activity (the sequence counter and the requests ever
// queued and handed out: every enqueue and hand-out moves one), the number of scheduled
// revisits and the ms until the earliest is due (on the Redis clock; 0 when none is
// scheduled)
var progressScript = redis.NewScript(rkit.LuaIDs + rkit.LuaGroups + rkit.LuaNow + `
local out = {}
for i = 1, #ARGV do
  local len, pending, unread, read = 0, 0, 0, ''
  if redis.call('EXISTS', KEYS[i]) == 1 then
    len = redis.call('XLEN', KEYS[i])
    local last = redis.call('XREVRANGE', KEYS[i], '+', '-', 'COUNT', 1)
    local delivered = nil
    for _, f in ipairs(groups_of(KEYS[i]) or {}) do
      if f['name'] == ARGV[i] then
        pending = tonumber(f['pending'])
        delivered = f['last-delivered-id']
      end
    end
    if #last > 0 then
      if delivered == nil or id_less(delivered, last[1][1]) then unread = 1 end
    end
    read = delivered or ''
  end
  out[#out + 1] = {len, pending, unread, read}
end
local n = #ARGV
out[#out + 1] = redis.call('ZCARD', KEYS[n + 1])
local c = redis.call('HMGET', KEYS[n + 2], 'waiting', 'queued', 'handed_out', 'revisits')
out[#out + 1] = tonumber(c[1] or '0') + redis.call('HLEN', KEYS[n + 4]) + redis.call('ZCARD', KEYS[n + 5])
out[#out + 1] = (redis.call('GET', KEYS[n + 3]) or '0') .. '/' .. (c[2] or '0') .. '/' .. (c[3] or '0')
out[#out + 1] = tonumber(c[4] or '0')
local first = redis.call('ZRANGE', KEYS[n + 6], 0, 0)
out[#out + 1] = 0
if #first > 0 then out[#out] = tonumber(first[1]) * 60000 - now_ms() end
return out
`)

// StageProgress is what one stage's group still has to do (summed over partitions).
type StageProgress struct {
	// Stream is the stage's input stream (sc:{<crawl>:*}:<kind> summed over partitions).
	Stream string `json:"stream"`
	// Group is the stage's group.
	Group string `json:"group"`
	// Length is how many entries the stream holds.
	Length int64 `json:"length"`
	// Pending is how many entries the group holds without an ack.
	Pending int64 `json:"pending"`
	// Unread reports entries the group has not read.
	Unread bool `json:"unread"`
}

// idle reports that the stage has nothing pending and nothing unread.
func (p StageProgress) idle() bool { return p.Pending == 0 && !p.Unread }

// Progress is a consistent snapshot of the crawl's outstanding work.
type Progress struct {
	// Seeded reports that the crawl was seeded (which "done" needs).
	Seeded bool `json:"seeded"`
	// Stages are the fetch, parse and store stages.
	Stages []StageProgress `json:"stages"`
	// Delayed is the number of requests waiting for a retry time.
	Delayed int64 `json:"delayed"`
	// Frontier is the number of requests waiting in host queues to be handed out.
	Frontier int64 `json:"frontier"`
	// Seeds is 1 when runtime seeds wait in <crawl>:start_urls (or its processing
	// list); read apart from the script, since those keys live in another slot.
	Seeds int64 `json:"seeds"`
	// Moving is set when a partitioned crawl's partitions changed between the two looks
	// that make its snapshot (see ReadProgress): not done yet.
	Moving bool `json:"moving,omitempty"`
	// Revisits is the number of revisits waiting in the revisit schedule (not yet
	// released into host queues).
	Revisits int64 `json:"revisits"`
	// NextRevisit is how long until the earliest scheduled revisit is due, on the Redis
	// clock (negative: overdue); 0 when none is scheduled.
	NextRevisit time.Duration `json:"next_revisit_ns,omitempty"`
	// Continuous is the crawl's continuous mode (see Done).
	Continuous Continuous `json:"continuous"`
	// SeedError says why the start-URL key cannot be read (a hash where a list
	// belongs): the crawl is not done, and will not be until the key is fixed.
	SeedError string `json:"seed_error,omitempty"`
	seedErr   error
}

// Err returns the error behind SeedError (it matches frontier.ErrSeedKeyType), nil when
// the seeds are readable.
func (p Progress) Err() error { return p.seedErr }

// Done reports that the crawl was seeded, no request waits in the frontier or the delayed
// set, and no stage has anything pending or unread; and, for a continuous crawl
// (Continuous.On), that no revisit is scheduled within its idle window (none at all
// without a window). A crawl that is not continuous is done with its revisits still
// scheduled: they wait for the next run. Every "done" of the crawl's processes and of
// `status` is this one.
func (p Progress) Done() bool {
	if !p.Seeded || p.Delayed > 0 || p.Frontier > 0 || p.Seeds > 0 || p.Moving || p.SeedError != "" || p.revisitsPending() {
		return false
	}
	for _, s := range p.Stages {
		if !s.idle() {
			return false
		}
	}
	return true
}

// partProgress is one partition's snapshot and what marks its activity.
type partProgress struct {
	stages            []StageProgress
	delayed, frontier int64
	revisits          int64
	nextRevisit       time.Duration // 0: no revisit scheduled
	mark              string        // the streams' last IDs and the sequence counter
}

// readPartProgress takes an atomic snapshot of partition k.
func readPartProgress(ctx context.Context, rdb redis.UniversalClient, k streams.Keys) (partProgress, error) {
	sg := stages(k)
	keys := make([]string, 0, len(sg)+3)
	args := make([]any, 0, len(sg))
	for _, s := range sg {
		keys = append(keys, s.Stream)
		args = append(args, s.Group)
	}
	keys = append(keys, k.Delayed, k.Counts, k.Seq, k.LegacyWaiting, k.LegacyFrontier, k.Revisits)
	res, err := rkit.RunRO(ctx, rdb, progressScript, keys, args...).Slice()
	if err != nil {
		return partProgress{}, fmt.Errorf("inspect: read progress: %w", err)
	}
	if len(res) != len(sg)+5 {
		return partProgress{}, fmt.Errorf("inspect: read progress: %d replies", len(res))
	}
	var p partProgress
	for i, s := range sg {
		row, _ := res[i].([]any)
		sp := StageProgress{Stream: s.Stream, Group: s.Group}
		if len(row) == 4 {
			sp.Length, _ = row[0].(int64)
			sp.Pending, _ = row[1].(int64)
			u, _ := row[2].(int64)
			sp.Unread = u == 1
			// The mark moves when the group reads an entry, not when a trim takes acked
			// entries off the stream's tail: a done crawl's trimmers run on.
			delivered, _ := row[3].(string)
			p.mark += delivered + ","
		}
		p.stages = append(p.stages, sp)
	}
	p.delayed, _ = res[len(sg)].(int64)
	p.frontier, _ = res[len(sg)+1].(int64)
	seq, _ := res[len(sg)+2].(string)
	p.mark += seq
	p.revisits, _ = res[len(sg)+3].(int64)
	next, _ := res[len(sg)+4].(int64)
	p.nextRevisit = time.Duration(next) * time.Millisecond
	p.mark += fmt.Sprintf("/%d", p.revisits)
	return p, nil
}

// ReadProgress takes a snapshot of the crawl's outstanding work. A crawl of one
// partition is read in one atomic script. A partitioned crawl cannot be (its partitions
// live in different slots), and a page parsed in one partition queues links in others,
// so it is read twice, partition by partition; it counts as idle only when both looks
// find every partition idle and no partition moved in between (each group's
// last-delivered ID, the sequence counter and the frontier's counters the same: a trim
// of acked entries is no move). Runtime seeds are read before and after.
func ReadProgress(ctx context.Context, rdb redis.UniversalClient, l streams.Layout) (Progress, error) {
	var p Progress
	// Whether the crawl was seeded is read with the seeds, before the snapshot: seeded_at
	// is set only after the seeds are in the frontier, and never cleared.
	seeds, seeded, err := readSeedsSeeded(ctx, rdb, l)
	if errors.Is(err, rkit.ErrSeedKeyType) {
		p.SeedError, p.seedErr, err = err.Error(), err, nil
	}
	if err != nil {
		return Progress{}, err
	}
	if p.Continuous, err = readContinuous(ctx, rdb, l); err != nil {
		return Progress{}, err
	}
	first, err := readLayoutProgress(ctx, rdb, l, &p)
	if err != nil {
		return Progress{}, err
	}
	p.Seeds = seeds
	p.Seeded = seeded
	if len(l.Parts) == 1 || !p.Done() {
		return p, nil
	}
	var again Progress
	second, err := readLayoutProgress(ctx, rdb, l, &again)
	if err != nil {
		return Progress{}, err
	}
	if seeds, err = readSeeds(ctx, rdb, l.Crawl); errors.Is(err, rkit.ErrSeedKeyType) {
		again.SeedError, again.seedErr = err.Error(), err
	} else if err != nil {
		return Progress{}, err
	}
	again.Seeded, again.Seeds, again.Continuous = true, seeds, p.Continuous
	again.Moving = second != first
	return again, nil
}

// readLayoutProgress fills p with the sum over the partitions of l and returns the
// partitions' activity marks.
func readLayoutProgress(ctx context.Context, rdb redis.UniversalClient, l streams.Layout, p *Progress) (string, error) {
	var marks string
	for i, k := range l.Parts {
		pp, err := readPartProgress(ctx, rdb, k)
		if err != nil {
			return "", err
		}
		marks += pp.mark + ";"
		p.Delayed += pp.delayed
		p.Frontier += pp.frontier
		if pp.revisits > 0 && (p.Revisits == 0 || pp.nextRevisit < p.NextRevisit) {
			p.NextRevisit = pp.nextRevisit
		}
		p.Revisits += pp.revisits
		if i == 0 {
			p.Stages = pp.stages
			for j, sg := range stages(l.Summed) {
				p.Stages[j].Stream = sg.Stream
			}
			continue
		}
		for j, s := range pp.stages {
			p.Stages[j].Length += s.Length
			p.Stages[j].Pending += s.Pending
			p.Stages[j].Unread = p.Stages[j].Unread || s.Unread
		}
	}
	return marks, nil
}

// readSeeds returns how many of the runtime seed keys of crawl exist.
func readSeeds(ctx context.Context, rdb redis.UniversalClient, crawl string) (int64, error) {
	k := streams.NewKeys(crawl)
	n, _, err := rkit.ReadSeeds(ctx, rdb, k.Seeds, k.SeedsProcessing, "")
	return n, err
}

// readSeedsSeeded is readSeeds plus whether the crawl of l was seeded, in one round trip.
func readSeedsSeeded(ctx context.Context, rdb redis.UniversalClient, l streams.Layout) (int64, bool, error) {
	k := l.Global
	return rkit.ReadSeeds(ctx, rdb, k.Seeds, k.SeedsProcessing, k.Meta)
}

// stage is a stream of the crawl and the stage group that reads it.
type stage struct{ Stream, Group string }

// stages returns the streams of partition k with the stage group that reads each, in
// the order data flows through them.
func stages(k streams.Keys) []stage {
	return []stage{{k.Requests, streams.StageFetch}, {k.Responses, streams.StageParse}, {k.Items, streams.StageStore}}
}
