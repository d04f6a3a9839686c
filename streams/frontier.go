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

// Frontier deduplicates and queues requests (and a page's items). Dedup and enqueue are
// one Lua script, so a crash never leaves a URL marked seen but not queued.
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

// ItemOut is an item a page yields, offered to Emit.
type ItemOut struct {
	// Key is the item's key fingerprint; an item whose key was emitted before is
	// dropped. Empty means "do not filter".
	Key []byte
	// Payload is the encoded item (spiders.MarshalItem).
	Payload []byte
}

// Emitted says what Emit queued.
type Emitted struct {
	Requests, DuplicateRequests int
	Items, DuplicateItems       int
}

// emitScript is a parsed page's whole output in one step: new request fingerprints go
// into the seen set and their requests into the requests stream; new item keys go into
// the item-key set and their items into the items stream. A crash can never leave a URL
// marked seen but not queued, and a page parsed twice (redelivery) yields no item twice.
//
// KEYS[1] -> sc:{c}:seen
// KEYS[2] -> sc:{c}:requests
// KEYS[3] -> sc:{c}:stats
// KEYS[4] -> sc:{c}:itemkeys
// KEYS[5] -> sc:{c}:items
// ARGV[1] -> number of requests n; then for each request: fingerprint (” = do not
// filter), message UUID, payload; then for each item: key (” = do not filter), message
// UUID, payload
// Output: {requests queued, request duplicates, items queued, item duplicates}
var emitScript = redis.NewScript(`
local function emit(set, stream, from, to)
  local new, dup = 0, 0
  for i = from, to, 3 do
    if ARGV[i] == '' or redis.call('SADD', set, ARGV[i]) == 1 then
      redis.call('XADD', stream, '*', '_watermill_message_uuid', ARGV[i + 1], 'metadata', '', 'payload', ARGV[i + 2])
      new = new + 1
    else
      dup = dup + 1
    end
  end
  return new, dup
end
local n = tonumber(ARGV[1])
local rq, rd = emit(KEYS[1], KEYS[2], 2, 1 + 3 * n)
local iq, id = emit(KEYS[4], KEYS[5], 2 + 3 * n, #ARGV)
if rq > 0 then redis.call('HINCRBY', KEYS[3], 'requests_queued', rq) end
if rd > 0 then redis.call('HINCRBY', KEYS[3], 'requests_duplicate', rd) end
if iq > 0 then redis.call('HINCRBY', KEYS[3], 'items_scraped', iq) end
if id > 0 then redis.call('HINCRBY', KEYS[3], 'items_duplicate_dropped', id) end
return {rq, rd, iq, id}
`)

// Enqueue queues the candidates not seen before and returns how many it queued.
func (f *Frontier) Enqueue(ctx context.Context, cands []Candidate) (int, error) {
	e, err := f.Emit(ctx, cands, nil)
	return e.Requests, err
}

// Emit queues the requests not seen before and the items whose keys were not emitted
// before, in one script. Requests known (in process) to be seen are dropped without a
// round trip.
func (f *Frontier) Emit(ctx context.Context, cands []Candidate, items []ItemOut) (Emitted, error) {
	args := make([]any, 1, 1+3*len(cands)+3*len(items))
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
	args[0] = (len(args) - 1) / 3
	for _, it := range items {
		args = append(args, string(it.Key), watermill.NewUUID(), string(it.Payload))
	}
	if len(args) == 1 {
		return Emitted{}, nil
	}
	keys := []string{f.keys.Seen(), f.keys.Requests(), f.keys.Stats(), f.keys.ItemKeys(), f.keys.Items()}
	cmd, err := f.b.do(ctx, func(ctx context.Context, p redis.Pipeliner) redis.Cmder {
		return emitScript.EvalSha(ctx, p, keys, args...)
	})
	if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
		// Redis lost its script cache (restart): load it and go again.
		cmd = emitScript.Run(ctx, f.rdb, keys, args...)
		err = cmd.Err()
	}
	if err != nil {
		return Emitted{}, fmt.Errorf("streams: emit %d requests and %d items: %w", args[0], len(items), err)
	}
	res, err := cmd.(*redis.Cmd).Int64Slice()
	if err != nil || len(res) != 4 {
		return Emitted{}, fmt.Errorf("streams: emit reply %v: %w", res, err)
	}
	if f.seen != nil {
		for _, fp := range sent {
			f.seen.add(fp) // queued now or seen before: either way it is in the set
		}
	}
	return Emitted{Requests: int(res[0]), DuplicateRequests: int(res[1]), Items: int(res[2]), DuplicateItems: int(res[3])}, nil
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
