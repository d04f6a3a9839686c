package streams

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// SeedKey is where running services take start URLs from: LPUSH a URL or a JSON request
// ({"url": ..., "meta": {...}, "priority": N, ...}) to it, the scrapy-redis habit, or
// SADD them when their order does not matter. It has no hash tag of its own, so
// `LPUSH shop:start_urls URL` works as scrapy-redis users type it; SeedProcessingKey
// shares its slot.
func SeedKey(crawl string) string { return crawl + ":start_urls" }

// SeedProcessingKey holds seeds taken from SeedKey until they are in the frontier.
func SeedProcessingKey(crawl string) string { return "{" + crawl + ":start_urls}:processing" }

// takeSeedsScript moves up to n seeds from the list (or set) to the processing list,
// stamped with the time, in one step: a seed is never out of Redis.
//
// KEYS[1] -> <crawl>:start_urls (list or set)
// KEYS[2] -> {<crawl>:start_urls}:processing
// ARGV[1] -> n, ARGV[2] -> now (Unix ms)
// Output: the stamped seeds ("<ms>|<seed>")
var takeSeedsScript = redis.NewScript(`
local t = redis.call('TYPE', KEYS[1])['ok']
local got
if t == 'list' then
  got = redis.call('RPOP', KEYS[1], tonumber(ARGV[1]))
elseif t == 'set' then
  got = redis.call('SPOP', KEYS[1], tonumber(ARGV[1]))
else
  return {}
end
if not got then return {} end
local out = {}
for i, s in ipairs(got) do
  out[i] = ARGV[2] .. '|' .. s
  redis.call('RPUSH', KEYS[2], out[i])
end
return out
`)

// Seeds hands out the seeds pushed at runtime. Each is taken into a processing list
// first and removed from it only after the caller has queued it (Done); seeds left in
// processing by a process that died are handed out again after a minute (the frontier's
// dedup makes that harmless).
type Seeds struct {
	rdb   redis.UniversalClient
	crawl string
}

// NewSeeds returns the runtime seeds of crawl.
func NewSeeds(rdb redis.UniversalClient, crawl string) *Seeds { return &Seeds{rdb: rdb, crawl: crawl} }

// Seed is one runtime seed as pushed, with its processing-list entry.
type Seed struct {
	Raw   string
	entry string
}

// Take returns up to n new seeds, plus seeds abandoned in processing for over a minute.
func (s *Seeds) Take(ctx context.Context, n int) ([]Seed, error) {
	if waiting, err := readSeeds(ctx, s.rdb, s.crawl); err != nil {
		return nil, fmt.Errorf("streams: take seeds: %w", err)
	} else if waiting == 0 {
		return nil, nil // the usual case: one cheap round trip instead of a script call
	}
	now := time.Now().UnixMilli()
	got, err := takeSeedsScript.Run(ctx, s.rdb, []string{SeedKey(s.crawl), SeedProcessingKey(s.crawl)}, n, now).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("streams: take seeds: %w", err)
	}
	var out []Seed
	for _, e := range got {
		_, raw, _ := strings.Cut(e, "|")
		out = append(out, Seed{Raw: raw, entry: e})
	}
	// Abandoned ones: the head of the processing list is the oldest.
	old, err := s.rdb.LRange(ctx, SeedProcessingKey(s.crawl), 0, int64(n)-1).Result()
	if err != nil {
		return out, nil
	}
	for _, e := range old {
		ms, raw, ok := strings.Cut(e, "|")
		at, perr := strconv.ParseInt(ms, 10, 64)
		if !ok || perr != nil || now-at > time.Minute.Milliseconds() {
			out = append(out, Seed{Raw: raw, entry: e})
		}
	}
	return out, nil
}

// Done removes seeds from processing once they are queued.
func (s *Seeds) Done(ctx context.Context, seeds []Seed) error {
	if len(seeds) == 0 {
		return nil
	}
	pipe := s.rdb.Pipeline()
	for _, sd := range seeds {
		pipe.LRem(ctx, SeedProcessingKey(s.crawl), 1, sd.entry)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("streams: seeds done: %w", err)
	}
	return nil
}
