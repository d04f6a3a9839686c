package streams

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// progressScript reads, in one atomic step, what every stage still has to do: per stream
// the group's pending count and whether entries were added after its last-delivered ID.
// Being one script matters: a stage acks its input only after its output is in, so an
// atomic look can never see the work "between" two streams.
//
// KEYS[i] -> stream i, ARGV[i] -> the group that reads it
// KEYS[#ARGV+1] -> sc:{c}:meta, KEYS[#ARGV+2] -> sc:{c}:delayed,
// KEYS[#ARGV+3] -> sc:{c}:frontier
// Output: per stream {length, pending, unread(0/1)}, then seeded (0/1), then the number
// of delayed requests, then the number of requests in the frontier
var progressScript = redis.NewScript(`
local function newer(a, b) -- is stream ID a after b?
  local am, as = string.match(a, '(%d+)-(%d+)')
  local bm, bs = string.match(b, '(%d+)-(%d+)')
  am, as, bm, bs = tonumber(am), tonumber(as), tonumber(bm), tonumber(bs)
  return am > bm or (am == bm and as > bs)
end
local out = {}
for i = 1, #ARGV do
  local len, pending, unread = 0, 0, 0
  if redis.call('EXISTS', KEYS[i]) == 1 then
    len = redis.call('XLEN', KEYS[i])
    local last = redis.call('XREVRANGE', KEYS[i], '+', '-', 'COUNT', 1)
    local delivered = nil
    for _, g in ipairs(redis.call('XINFO', 'GROUPS', KEYS[i])) do
      local f = {}
      for j = 1, #g, 2 do f[g[j]] = g[j + 1] end
      if f['name'] == ARGV[i] then
        pending = tonumber(f['pending'])
        delivered = f['last-delivered-id']
      end
    end
    if #last > 0 and (delivered == nil or newer(last[1][1], delivered)) then unread = 1 end
  end
  out[#out + 1] = {len, pending, unread}
end
out[#out + 1] = redis.call('HEXISTS', KEYS[#ARGV + 1], 'seeded_at')
out[#out + 1] = redis.call('ZCARD', KEYS[#ARGV + 2])
out[#out + 1] = redis.call('ZCARD', KEYS[#ARGV + 3])
return out
`)

// StageProgress is what one stage's group still has to do.
type StageProgress struct {
	Stream  string `json:"stream"`
	Group   string `json:"group"`
	Length  int64  `json:"length"`
	Pending int64  `json:"pending"`
	Unread  bool   `json:"unread"`
}

// Idle reports that the stage has nothing pending and nothing unread.
func (p StageProgress) Idle() bool { return p.Pending == 0 && !p.Unread }

// Progress is a consistent snapshot of the crawl's outstanding work.
type Progress struct {
	Seeded bool            `json:"seeded"`
	Stages []StageProgress `json:"stages"`
	// Delayed is the number of requests waiting for a retry time.
	Delayed int64 `json:"delayed"`
	// Frontier is the number of requests waiting to be dispatched.
	Frontier int64 `json:"frontier"`
	// Seeds is 1 when runtime seeds wait in <crawl>:start_urls (or its processing
	// list); read apart from the script, since those keys live in another slot.
	Seeds int64 `json:"seeds"`
}

// Done reports that the crawl was seeded, no request waits in the frontier or the delayed
// set, and no stage has anything pending or unread.
func (p Progress) Done() bool {
	if !p.Seeded || p.Delayed > 0 || p.Frontier > 0 || p.Seeds > 0 {
		return false
	}
	for _, s := range p.Stages {
		if !s.Idle() {
			return false
		}
	}
	return true
}

// ReadProgress takes an atomic snapshot of the stages of the crawl.
func ReadProgress(ctx context.Context, rdb redis.UniversalClient, k Keys) (Progress, error) {
	sg := k.Streams()
	keys := make([]string, 0, len(sg)+1)
	args := make([]any, 0, len(sg))
	for _, s := range sg {
		keys = append(keys, s.Stream)
		args = append(args, s.Group)
	}
	keys = append(keys, k.Meta(), k.Delayed(), k.Frontier())
	res, err := progressScript.Run(ctx, rdb, keys, args...).Slice()
	if err != nil {
		return Progress{}, fmt.Errorf("streams: read progress: %w", err)
	}
	var p Progress
	for i, s := range sg {
		row, _ := res[i].([]any)
		sp := StageProgress{Stream: s.Stream, Group: s.Group}
		if len(row) == 3 {
			sp.Length, _ = row[0].(int64)
			sp.Pending, _ = row[1].(int64)
			u, _ := row[2].(int64)
			sp.Unread = u == 1
		}
		p.Stages = append(p.Stages, sp)
	}
	seeded, _ := res[len(sg)].(int64)
	p.Seeded = seeded == 1
	p.Delayed, _ = res[len(sg)+1].(int64)
	p.Frontier, _ = res[len(sg)+2].(int64)
	if p.Seeds, err = rdb.Exists(ctx, SeedKey(k.Crawl()), SeedProcessingKey(k.Crawl())).Result(); err != nil {
		return Progress{}, fmt.Errorf("streams: read progress: %w", err)
	}
	return p, nil
}
