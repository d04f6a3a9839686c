package frontier

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"
)

// Seeds pushed at runtime (streams.Keys.Seeds: a list, a set or a sorted set): each is taken
// into a processing list first and removed from it only after it is queued; seeds left
// in processing by a process that died are taken again after a minute (the frontier's
// dedup makes that harmless).

// ErrSeedKeyType is matched (errors.Is) by the error of a start-URL key holding
// something seeds cannot be taken from (a hash, a string, a stream): the crawl stops
// with it instead of waiting for seeds forever.
var ErrSeedKeyType = rkit.ErrSeedKeyType

// takeSeedsScript moves up to n seeds from the list, set or sorted set (highest score
// first) to the processing list, stamped with the time, in one step: a seed is never
// out of Redis.
//
// KEYS[1] -> <crawl>:start_urls (list, set or sorted set)
// KEYS[2] -> {<crawl>:start_urls}:processing
// ARGV[1] -> n, ARGV[2] -> now (Unix ms)
// Output: the stamped seeds ("<ms>|<seed>"); an error "SEEDTYPE <type>" for a key of
// another type
var takeSeedsScript = redis.NewScript(`
local t = redis.call('TYPE', KEYS[1])['ok']
local got
if t == 'list' then
  got = redis.call('RPOP', KEYS[1], tonumber(ARGV[1]))
elseif t == 'set' then
  got = redis.call('SPOP', KEYS[1], tonumber(ARGV[1]))
elseif t == 'zset' then
  local pairs = redis.call('ZPOPMAX', KEYS[1], tonumber(ARGV[1]))
  got = {}
  for i = 1, #pairs, 2 do got[#got + 1] = pairs[i] end
elseif t == 'none' then
  return {}
else
  return redis.error_reply('SEEDTYPE ' .. t)
end
if not got then return {} end
local out = {}
for i, s in ipairs(got) do
  out[i] = ARGV[2] .. '|' .. s
  redis.call('RPUSH', KEYS[2], out[i])
end
return out
`)

// TakeSeeds queues up to n of the seeds pushed at runtime, plus seeds left in
// processing for over a minute. read turns each seed as pushed into a candidate: nil
// drops the seed, an error moves it to the crawl's dead letters (stage "seed", with the
// error). The candidates are queued (Emit), the crawl is marked seeded, and only then
// are the seeds removed from processing. It returns how many seeds it took and what
// the emit queued.
func (f *Frontier) TakeSeeds(ctx context.Context, n int, read func(raw string) (*Candidate, error)) (taken int, e Emitted, err error) {
	batch, err := f.takeSeeds(ctx, n)
	if err != nil || len(batch) == 0 {
		return 0, e, err
	}
	cands := make([]Candidate, 0, len(batch))
	dead := f.layout.Parts[0].Dead
	for _, sd := range batch {
		c, err := read(sd.raw)
		if err != nil {
			d := rkit.Dead{Stage: "seed", Error: err.Error()}
			if err := f.rdb.XAdd(ctx, &redis.XAddArgs{Stream: dead, Values: d.Values("payload", sd.raw)}).Err(); err != nil {
				return 0, e, fmt.Errorf("frontier: dead-letter a seed: %w", err)
			}
			continue
		}
		if c != nil {
			cands = append(cands, *c)
		}
	}
	if e, err = f.Emit(ctx, 0, cands, nil); err != nil {
		return 0, e, err
	}
	if err := f.MarkSeeded(ctx); err != nil {
		return 0, e, err
	}
	return len(batch), e, f.seedsDone(ctx, batch)
}

// seed is one runtime seed as pushed (raw), with its processing-list entry.
type seed struct{ raw, entry string }

// takeSeeds returns up to n new seeds, plus seeds abandoned in processing for over a
// minute.
func (f *Frontier) takeSeeds(ctx context.Context, n int) ([]seed, error) {
	k := f.layout.Global
	if waiting, _, err := rkit.ReadSeeds(ctx, f.rdb, k.Seeds, k.SeedsProcessing, ""); err != nil {
		return nil, fmt.Errorf("frontier: take seeds: %w", err)
	} else if waiting == 0 {
		return nil, nil // the usual case: one cheap round trip instead of a script call
	}
	now := time.Now().UnixMilli()
	got, err := takeSeedsScript.Run(ctx, f.rdb, []string{k.Seeds, k.SeedsProcessing}, n, now).StringSlice()
	if err != nil {
		if t, ok := strings.CutPrefix(err.Error(), "SEEDTYPE "); ok {
			return nil, rkit.CheckSeedType(k.Seeds, t)
		}
		return nil, fmt.Errorf("frontier: take seeds: %w", err)
	}
	var out []seed
	for _, e := range got {
		_, raw, _ := strings.Cut(e, "|")
		out = append(out, seed{raw: raw, entry: e})
	}
	// Abandoned ones: the head of the processing list is the oldest.
	old, err := f.rdb.LRange(ctx, k.SeedsProcessing, 0, int64(n)-1).Result()
	if err != nil {
		return out, nil
	}
	for _, e := range old {
		ms, raw, ok := strings.Cut(e, "|")
		at, perr := strconv.ParseInt(ms, 10, 64)
		if !ok || perr != nil || now-at > time.Minute.Milliseconds() {
			out = append(out, seed{raw: raw, entry: e})
		}
	}
	return out, nil
}

// seedsDone removes seeds from processing once they are queued.
func (f *Frontier) seedsDone(ctx context.Context, seeds []seed) error {
	if len(seeds) == 0 {
		return nil
	}
	pipe := f.rdb.Pipeline()
	for _, sd := range seeds {
		pipe.LRem(ctx, f.layout.Global.SeedsProcessing, 1, sd.entry)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("frontier: seeds done: %w", err)
	}
	return nil
}

// CheckSeedKey returns an error matching ErrSeedKeyType when the crawl's start-URL key exists with a
// type seeds cannot be taken from.
func CheckSeedKey(ctx context.Context, rdb redis.UniversalClient, crawl string) error {
	k := streams.NewKeys(crawl)
	t, err := rdb.Type(ctx, k.Seeds).Result()
	if err != nil {
		return fmt.Errorf("frontier: check start url key: %w", err)
	}
	return rkit.CheckSeedType(k.Seeds, t)
}
