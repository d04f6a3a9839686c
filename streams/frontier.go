package streams

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/redis/go-redis/v9"
)

// Candidate is a request offered to the frontier.
type Candidate struct {
	// Fingerprint identifies the request (see spiders.Fingerprint). Empty means "do not
	// filter": the request is queued even if seen (retries, recrawls).
	Fingerprint []byte
	// Payload is the encoded request (spiders.MarshalRequest).
	Payload []byte
}

// FrontierConfig configures a Frontier.
type FrontierConfig struct {
	// Client is the Redis client; the Frontier does not close it.
	Client redis.UniversalClient
	// Keys of the crawl.
	Keys Keys
	// SeenCache is how many fingerprints known to be in the seen set are remembered in
	// process, so that links every page repeats (navigation) stop costing Redis work.
	// Default 1,000,000 (about 40 MB); negative disables it.
	SeenCache int
}

// Frontier deduplicates and queues requests. Dedup and enqueue are one Lua script, so a
// crash never leaves a URL marked seen but not queued.
type Frontier struct {
	rdb  redis.UniversalClient
	keys Keys
	b    *batcher
	seen *seenCache
}

// NewFrontier returns a Frontier.
func NewFrontier(cfg FrontierConfig) (*Frontier, error) {
	if cfg.Client == nil {
		return nil, errors.New("streams: frontier needs a redis client")
	}
	if cfg.Keys.Crawl() == "" {
		return nil, errors.New("streams: frontier needs a crawl name")
	}
	if cfg.SeenCache == 0 {
		cfg.SeenCache = 1_000_000
	}
	f := &Frontier{rdb: cfg.Client, keys: cfg.Keys, b: newBatcher(cfg.Client, 64, DefaultPublishTimeout, DefaultPublishLinger)}
	if cfg.SeenCache > 0 {
		f.seen = newSeenCache(cfg.SeenCache)
	}
	return f, nil
}

// enqueueScript adds new fingerprints to the seen set and queues their requests, in one
// step per request.
//
// KEYS[1] -> sc:{c}:seen
// KEYS[2] -> sc:{c}:requests
// KEYS[3] -> sc:{c}:stats
// ARGV[3i+1] -> fingerprint (” = do not filter), ARGV[3i+2] -> message UUID,
// ARGV[3i+3] -> payload
// Output: one integer per request: 1 queued, 0 already seen.
var enqueueScript = redis.NewScript(`
local out, queued = {}, 0
for i = 1, #ARGV, 3 do
  if ARGV[i] == '' or redis.call('SADD', KEYS[1], ARGV[i]) == 1 then
    redis.call('XADD', KEYS[2], '*', '_watermill_message_uuid', ARGV[i + 1], 'metadata', '', 'payload', ARGV[i + 2])
    out[#out + 1] = 1
    queued = queued + 1
  else
    out[#out + 1] = 0
  end
end
if queued > 0 then redis.call('HINCRBY', KEYS[3], 'requests_queued', queued) end
if #out > queued then redis.call('HINCRBY', KEYS[3], 'requests_duplicate', #out - queued) end
return out
`)

// Enqueue queues the candidates not seen before and returns how many it queued.
// Candidates already known to be seen are dropped in process without a round trip.
func (f *Frontier) Enqueue(ctx context.Context, cands []Candidate) (int, error) {
	args := make([]any, 0, 3*len(cands))
	var sent [][]byte
	for _, c := range cands {
		if len(c.Fingerprint) > 0 {
			if f.seen != nil && f.seen.has(c.Fingerprint) {
				continue
			}
			sent = append(sent, c.Fingerprint)
		}
		args = append(args, string(c.Fingerprint), watermill.NewUUID(), string(c.Payload))
	}
	if len(args) == 0 {
		return 0, nil
	}
	keys := []string{f.keys.Seen(), f.keys.Requests(), f.keys.Stats()}
	cmd, err := f.b.do(ctx, func(ctx context.Context, p redis.Pipeliner) redis.Cmder {
		return enqueueScript.EvalSha(ctx, p, keys, args...)
	})
	if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
		// Redis lost its script cache (restart): load it and go again.
		cmd = enqueueScript.Run(ctx, f.rdb, keys, args...)
		err = cmd.Err()
	}
	if err != nil {
		return 0, fmt.Errorf("streams: enqueue %d requests: %w", len(args)/3, err)
	}
	res, err := cmd.(*redis.Cmd).Int64Slice()
	if err != nil {
		return 0, fmt.Errorf("streams: enqueue reply: %w", err)
	}
	queued := 0
	for _, r := range res {
		queued += int(r)
	}
	if f.seen != nil {
		for _, fp := range sent {
			f.seen.add(fp) // queued now or seen before: either way it is in the set
		}
	}
	return queued, nil
}

// MarkSeeded records that the crawl has been seeded, which "done" requires.
func (f *Frontier) MarkSeeded(ctx context.Context, spider string) error {
	err := f.rdb.HSetNX(ctx, f.keys.Meta(), "seeded_at", time.Now().UTC().Format(time.RFC3339)).Err()
	if err == nil {
		err = f.rdb.HSet(ctx, f.keys.Meta(), "spider", spider).Err()
	}
	if err != nil {
		return fmt.Errorf("streams: mark crawl seeded: %w", err)
	}
	return nil
}

// Close stops the frontier's batcher.
func (f *Frontier) Close() { f.b.close() }

// seenCache remembers fingerprints known to be in Redis's seen set. When full it drops
// an arbitrary half: a forgotten fingerprint only costs one more SADD.
type seenCache struct {
	mu  sync.Mutex
	max int
	m   map[string]struct{}
}

func newSeenCache(max int) *seenCache {
	return &seenCache{max: max, m: make(map[string]struct{}, min(max, 1<<16))}
}

func (c *seenCache) has(fp []byte) bool {
	c.mu.Lock()
	_, ok := c.m[string(fp)]
	c.mu.Unlock()
	return ok
}

func (c *seenCache) add(fp []byte) {
	c.mu.Lock()
	if len(c.m) >= c.max {
		n := 0
		for k := range c.m {
			delete(c.m, k)
			if n++; n >= c.max/2 {
				break
			}
		}
	}
	c.m[string(fp)] = struct{}{}
	c.mu.Unlock()
}
