package frontier

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// SeedKey is where running services take start URLs from: LPUSH a URL or a JSON request
// ({"url": ..., "meta": {...}, "priority": N, ...}) to it, the scrapy-redis habit, SADD
// them when their order does not matter, or ZADD them with a score (taken highest score
// first, like scrapy-redis with REDIS_START_URLS_AS_ZSET). A key of any other type is
// an error (SeedKeyError) that stops the crawl with a message rather than hang it. It has no hash tag of its own, so
// `LPUSH shop:start_urls URL` works as scrapy-redis users type it; SeedProcessingKey
// shares its slot.
func SeedKey(crawl string) string { return crawl + ":start_urls" }

// SeedProcessingKey holds seeds taken from SeedKey until they are in the frontier.
func SeedProcessingKey(crawl string) string { return "{" + crawl + ":start_urls}:processing" }

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
		return nil, fmt.Errorf("frontier: take seeds: %w", err)
	} else if waiting == 0 {
		return nil, nil // the usual case: one cheap round trip instead of a script call
	}
	now := time.Now().UnixMilli()
	got, err := takeSeedsScript.Run(ctx, s.rdb, []string{SeedKey(s.crawl), SeedProcessingKey(s.crawl)}, n, now).StringSlice()
	if t, ok := strings.CutPrefix(errString(err), "SEEDTYPE "); ok {
		return nil, &SeedKeyError{Key: SeedKey(s.crawl), Type: t}
	}
	if err != nil {
		return nil, fmt.Errorf("frontier: take seeds: %w", err)
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
		return fmt.Errorf("frontier: seeds done: %w", err)
	}
	return nil
}

// ErrSeedKeyType is matched (errors.Is) by a SeedKeyError.
var ErrSeedKeyType = errors.New("frontier: start url key has the wrong type")

// SeedKeyError is a start-URL key holding something seeds cannot be taken from (a hash,
// a string, a stream): the crawl stops with it instead of waiting for seeds forever.
type SeedKeyError struct {
	Key  string // <crawl>:start_urls
	Type string // what TYPE answers
}

func (e *SeedKeyError) Error() string {
	return fmt.Sprintf("frontier: %s is a %s; start urls must be a list (LPUSH), a set (SADD) or a sorted set (ZADD): delete it or push the urls with one of those", e.Key, e.Type)
}

// Is makes errors.Is(err, ErrSeedKeyType) true.
func (e *SeedKeyError) Is(target error) bool { return target == ErrSeedKeyType }

// seedKeyTypes are the key types seeds are taken from ("none": no seeds waiting).
var seedKeyTypes = map[string]bool{"none": true, "list": true, "set": true, "zset": true}

// CheckSeedKey returns a *SeedKeyError when crawl's start-URL key exists with a type
// seeds cannot be taken from.
func CheckSeedKey(ctx context.Context, rdb redis.UniversalClient, crawl string) error {
	t, err := rdb.Type(ctx, SeedKey(crawl)).Result()
	if err != nil {
		return fmt.Errorf("frontier: check start url key: %w", err)
	}
	if !seedKeyTypes[t] {
		return &SeedKeyError{Key: SeedKey(crawl), Type: t}
	}
	return nil
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
