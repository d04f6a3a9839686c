package streams

import (
	"context"
	"errors"
	"fmt"
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
	// Priority and Depth of the request place it in the frontier (see Order).
	Priority, Depth int
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
	// Order of the frontier. Default OrderPriority.
	Order Order
	// MaxRequests stops queueing new requests once this many were ever queued (the
	// spider's max_pages); 0 means no limit.
	MaxRequests int64
	// Window is the dispatch window (see DispatcherConfig.Window): an emit that queues
	// requests also dispatches up to it, so new requests reach idle fetchers at once.
	// 0 leaves dispatching to the Dispatcher.
	Window int
	// CountUnread: see DispatcherConfig.CountUnread.
	CountUnread bool
	// Dedup is the crawl's duplicate filter (OpenDeduper); nil means a plain set.
	Dedup *Deduper
	// Revisit lets a URL be queued again once it was last queued this long ago (crawls
	// that run every day). Its fingerprints then live in a hash with their time instead
	// of the seen set. 0: a URL is seen forever.
	Revisit time.Duration
}

// Frontier deduplicates and queues requests (and a page's items). Dedup and enqueue are
// one Lua script, so a crash never leaves a URL marked seen but not queued.
type Frontier struct {
	rdb         redis.UniversalClient
	keys        Keys
	b           *batcher
	seen        *seenCache
	order       Order
	maxRequests int64
	window      int
	countUnread bool
	revisit     time.Duration
	emit        *redis.Script
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
	if cfg.Order == "" {
		cfg.Order = OrderPriority
	}
	if err := cfg.Order.Validate(); err != nil {
		return nil, err
	}
	f := &Frontier{rdb: cfg.Client, keys: cfg.Keys, b: newBatcher(cfg.Client, 64, DefaultPublishTimeout, DefaultPublishLinger),
		order: cfg.Order, maxRequests: cfg.MaxRequests, window: cfg.Window, countUnread: cfg.CountUnread,
		revisit: cfg.Revisit}
	seenAdd := setSeenAdd
	if cfg.Dedup != nil {
		seenAdd = cfg.Dedup.LuaSeenAdd()
	}
	f.emit = redis.NewScript(seenAdd + dispatchLua + emitBody)
	if cfg.SeenCache > 0 && cfg.Revisit == 0 { // revisited URLs must reach the script
		f.seen = newSeenCache(cfg.SeenCache)
	}
	return f, nil
}

// setSeenAdd is seen_add over a plain set, for frontiers without a Deduper.
const setSeenAdd = `
local function seen_add(base, fp) return redis.call('SADD', base, fp) end
`

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
	// OverLimit counts requests dropped because the crawl reached max_pages.
	OverLimit int
}

// emitBody (run as the Frontier's emit script, after the crawl's seen_add from its
// Deduper and dispatchLua) queues a parsed page's new requests in one step: new fingerprints go into
// the seen set and their requests into the frontier ZSET, so a crash can never leave a
// URL marked seen but not queued. (Items do not go through Lua: a script call costs
// Redis ~15 µs more than the plain commands it runs; see EmitItems.)
//
// KEYS[1] -> sc:{c}:seen (the base key of the crawl's dedup: a set, buckets or a Bloom
// filter)
// KEYS[2] -> sc:{c}:frontier
// KEYS[3] -> sc:{c}:stats
// KEYS[4] -> sc:{c}:seq
// KEYS[5] -> sc:{c}:requests
// KEYS[6] -> sc:{c}:seenat (fingerprint -> when queued, ms; used instead of the seen set
// when revisiting)
// ARGV[1] -> number of requests n, ARGV[2] -> max requests ever queued (0: no limit),
// ARGV[3] -> 1 or -1: sign of the sequence in the score (FIFO or LIFO within a band),
// ARGV[4] -> dispatch window (0: do not dispatch), ARGV[5] -> 'lag' or 'range',
// ARGV[6] -> revisit interval in ms (0: a URL is seen forever);
// then per request: fingerprint (empty: do not filter), score band, payload
// Output: {requests queued, request duplicates, requests over max_pages}
const emitBody = `
local n, limit, sign, revisit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[6])
local now = 0
if revisit > 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- is_new records fp as seen and reports whether it was not (or was seen too long ago).
local function is_new(fp)
  if fp == '' then return true end
  if revisit == 0 then return seen_add(KEYS[1], fp) == 1 end
  local at = redis.call('HGET', KEYS[6], fp)
  if at and now - tonumber(at) < revisit then return false end
  redis.call('HSET', KEYS[6], fp, now)
  return true
end
local rq, rd, over = 0, 0, 0
local queued = 0
if limit > 0 then queued = tonumber(redis.call('HGET', KEYS[3], 'max_pages_used') or '0') end
local seq = 0
if n > 0 then seq = redis.call('INCRBY', KEYS[4], n) - n end
for i = 7, 6 + 3 * n, 3 do
  seq = seq + 1
  if limit > 0 and queued + rq >= limit then
    over = over + 1
  elseif is_new(ARGV[i]) then
    redis.call('ZADD', KEYS[2], tonumber(ARGV[i + 1]) * 1e9 + sign * (seq % 1e9), ARGV[i + 2])
    rq = rq + 1
  else
    rd = rd + 1
  end
end
-- max_pages_used is exact (max_pages reads it); the other counters are the caller's.
if rq > 0 and limit > 0 then redis.call('HINCRBY', KEYS[3], 'max_pages_used', rq) end
-- Dispatch at once only when these are the frontier's only requests: fetchers may be
-- idle. With a backlog, the Dispatcher keeps the window full.
if rq > 0 and tonumber(ARGV[4]) > 0 and redis.call('ZCARD', KEYS[2]) == rq then
  dispatch(KEYS[2], KEYS[5], KEYS[4], 'fetch', tonumber(ARGV[4]), ARGV[5])
end
return {rq, rd, over}
`

// Enqueue queues the candidates not seen before and returns how many it queued.
func (f *Frontier) Enqueue(ctx context.Context, cands []Candidate) (int, error) {
	e, err := f.Emit(ctx, cands, nil)
	return e.Requests, err
}

// Emit queues the requests not seen before (one script call, made only when some are
// not known in process to be seen) and the items whose keys were not emitted before (see
// EmitItems), at the same time.
func (f *Frontier) Emit(ctx context.Context, cands []Candidate, items []ItemOut) (Emitted, error) {
	var e Emitted
	itemsDone := make(chan error, 1)
	go func() {
		var err error
		e.Items, e.DuplicateItems, err = f.EmitItems(ctx, items)
		itemsDone <- err
	}()
	var err error
	e.Requests, e.DuplicateRequests, e.OverLimit, err = f.emitRequests(ctx, cands)
	if ierr := <-itemsDone; err == nil {
		err = ierr
	}
	return e, err
}

func (f *Frontier) emitRequests(ctx context.Context, cands []Candidate) (queued, dups, over int, err error) {
	const head = 6
	args := make([]any, head, head+3*len(cands))
	var sent [][]byte
	for _, c := range cands {
		if len(c.Fingerprint) > 0 {
			if f.seen != nil && f.seen.has(c.Fingerprint) {
				dups++
				continue
			}
			sent = append(sent, c.Fingerprint)
		}
		args = append(args, string(c.Fingerprint), f.order.band(c.Priority, c.Depth), string(c.Payload))
	}
	if len(args) == head {
		return 0, dups, 0, nil
	}
	mode := "lag"
	if f.countUnread {
		mode = "range"
	}
	args[0], args[1], args[2], args[3], args[4], args[5] = (len(args)-head)/3, f.maxRequests, f.order.sign(), f.window, mode, f.revisit.Milliseconds()
	keys := []string{f.keys.Seen(), f.keys.Frontier(), f.keys.Stats(), f.keys.Seq(), f.keys.Requests(), f.keys.SeenAt()}
	cmd, err := f.b.do(ctx, func(ctx context.Context, p redis.Pipeliner) redis.Cmder {
		return f.emit.EvalSha(ctx, p, keys, args...)
	})
	if isNoScript(err) {
		// Redis lost its script cache (restart): load it and go again.
		cmd = f.emit.Run(ctx, f.rdb, keys, args...)
		err = cmd.Err()
	}
	if err != nil {
		return 0, 0, 0, fmt.Errorf("streams: enqueue %d requests: %w", args[0], err)
	}
	res, err := cmd.(*redis.Cmd).Int64Slice()
	if err != nil || len(res) != 3 {
		return 0, 0, 0, fmt.Errorf("streams: enqueue reply %v: %w", res, err)
	}
	if f.seen != nil {
		for _, fp := range sent {
			f.seen.add(fp) // queued now or seen before: either way it is in the set
		}
	}
	return int(res[0]), dups + int(res[1]), int(res[2]), nil
}

// EmitItems appends the items whose keys were not emitted before to the items stream
// with plain pipelined commands (a Lua call would cost Redis ~15 µs more per page): one
// SMISMEMBER of the keys, then one pipeline of the new items' XADDs followed by the SADD
// of their keys. A crash, or a twin page parsed at the same moment, between the two
// round trips can only add an item twice (bounded; sinks skip it); a key is never
// recorded while its item is not in the stream. Items without a key are always added.
func (f *Frontier) EmitItems(ctx context.Context, items []ItemOut) (added, dups int, err error) {
	if len(items) == 0 {
		return 0, 0, nil
	}
	var keyed []any
	for _, it := range items {
		if len(it.Key) > 0 {
			keyed = append(keyed, string(it.Key))
		}
	}
	known := map[string]bool{}
	if len(keyed) > 0 {
		cmd, err := f.b.do(ctx, func(ctx context.Context, p redis.Pipeliner) redis.Cmder {
			return p.SMIsMember(ctx, f.keys.ItemKeys(), keyed...)
		})
		if err != nil {
			return 0, 0, fmt.Errorf("streams: check item keys: %w", err)
		}
		for i, in := range cmd.(*redis.BoolSliceCmd).Val() {
			if in {
				known[keyed[i].(string)] = true
			}
		}
	}
	var values []map[string]any
	var fresh []any
	for _, it := range items {
		if len(it.Key) > 0 && known[string(it.Key)] {
			dups++
			continue
		}
		if len(it.Key) > 0 {
			known[string(it.Key)] = true // the same key twice on one page
			fresh = append(fresh, string(it.Key))
		}
		values = append(values, map[string]any{"_watermill_message_uuid": watermill.NewUUID(), "metadata": "", "payload": it.Payload})
	}
	if len(values) == 0 {
		return 0, dups, nil
	}
	// One pipeline, XADDs first: Redis runs a connection's commands in order, so the
	// keys are recorded only after their items went in (both fail alike under OOM).
	xadds := make([]*redis.StringCmd, len(values))
	_, err = f.b.do(ctx, func(ctx context.Context, p redis.Pipeliner) redis.Cmder {
		for i, v := range values {
			xadds[i] = p.XAdd(ctx, &redis.XAddArgs{Stream: f.keys.Items(), Values: v})
		}
		if len(fresh) == 0 {
			return xadds[len(xadds)-1]
		}
		return p.SAdd(ctx, f.keys.ItemKeys(), fresh...)
	})
	for _, x := range xadds {
		if x != nil && x.Err() != nil {
			return 0, 0, fmt.Errorf("streams: append item: %w", x.Err())
		}
	}
	if err != nil {
		return 0, 0, fmt.Errorf("streams: record item keys: %w", err)
	}
	return len(values), dups, nil
}

// Known reports whether fp is known in process to be in the seen set already (false
// when the frontier keeps no cache, or revisits URLs): a caller can drop the request
// before encoding it.
func (f *Frontier) Known(fp []byte) bool { return f.seen != nil && f.seen.has(fp) }

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
