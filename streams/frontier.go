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
	// Host is the request URL's host (name or name:port); it picks the partition.
	Host string
}

// FrontierConfig configures a Frontier.
type FrontierConfig struct {
	// Client is the Redis client; the Frontier does not close it.
	Client redis.UniversalClient
	// Layout of the crawl; when it is zero, Keys (a crawl of one partition).
	Layout Layout
	// Keys of a crawl of one partition, when Layout is not set.
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
	// Window is the dispatch window (see DispatcherConfig.Window): an emit into an empty
	// frontier sends its new requests straight to the requests stream while the stream
	// has fewer unread entries than this, so they reach idle fetchers at once (and cost
	// Redis no trip through the frontier ZSET). 0 leaves dispatching to the Dispatcher.
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
	layout      Layout
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
	if cfg.Layout.N() == 0 {
		cfg.Layout = NewLayout(cfg.Keys.Crawl(), 1)
	}
	if cfg.Layout.Crawl() == "" {
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
	f := &Frontier{rdb: cfg.Client, layout: cfg.Layout, b: newBatcher(cfg.Client, 64, DefaultPublishTimeout, DefaultPublishLinger),
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
// Deduper and dispatchLua) queues a parsed page's new requests of one partition in one
// step: new fingerprints go into the seen set and their requests into the frontier ZSET
// (or, when it is empty and the window has room, straight into the requests stream), so
// a crash can never leave a URL marked seen but not queued. (Items do not go through
// Lua: a script call costs Redis ~15 µs more than the plain commands it runs; see
// EmitItems.) Every key is the partition's.
//
// KEYS[1] -> sc:{c}:seen (the base key of the crawl's dedup: a set, buckets or a Bloom
// filter)
// KEYS[2] -> sc:{c}:frontier
// KEYS[3] -> sc:{c}:stats (the partition's: max_pages_used of a crawl of one partition)
// KEYS[4] -> sc:{c}:seq
// KEYS[5] -> sc:{c}:requests
// KEYS[6] -> sc:{c}:seenat (fingerprint -> when queued, ms; used instead of the seen set
// when revisiting)
// ARGV[1] -> number of requests n, ARGV[2] -> max requests ever queued (0: no limit),
// ARGV[3] -> 1 or -1: sign of the sequence in the score (FIFO or LIFO within a band),
// ARGV[4] -> dispatch window (0: do not dispatch), ARGV[5] -> 'lag' or 'range',
// ARGV[6] -> revisit interval in ms (0: a URL is seen forever),
// ARGV[7] -> 1 when ARGV[2] is a budget reserved for this call in the crawl-wide
// counter (partitioned crawls) rather than a limit on KEYS[3]'s max_pages_used;
// then per request: fingerprint (empty: do not filter), score band, payload
// Output: {requests queued, request duplicates, requests over max_pages}
const emitBody = `
local n, limit, sign, revisit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[6])
local budget = ARGV[7] == '1'
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
if limit > 0 and not budget then queued = tonumber(redis.call('HGET', KEYS[3], 'max_pages_used') or '0') end
if budget and limit == 0 then return {0, 0, n} end
-- With nothing queued ahead of them, new requests skip the frontier: they go straight to
-- the stream (fetchers may be idle), in frontier order, as far as the window has room.
-- With a backlog, the Dispatcher keeps the window full.
local window = tonumber(ARGV[4])
local direct = window > 0 and redis.call('ZCARD', KEYS[2]) == 0
local fresh = {}
local seq = 0
if n > 0 then seq = redis.call('INCRBY', KEYS[4], n) - n end
for i = 8, 7 + 3 * n, 3 do
  seq = seq + 1
  if limit > 0 and queued + rq >= limit then
    over = over + 1
  elseif is_new(ARGV[i]) then
    local score = tonumber(ARGV[i + 1]) * 1e9 + sign * (seq % 1e9)
    if direct then
      fresh[#fresh + 1] = {score, ARGV[i + 2], seq}
    else
      redis.call('ZADD', KEYS[2], score, ARGV[i + 2])
    end
    rq = rq + 1
  else
    rd = rd + 1
  end
end
-- max_pages_used is exact (max_pages reads it); the other counters are the caller's.
if rq > 0 and limit > 0 and not budget then redis.call('HINCRBY', KEYS[3], 'max_pages_used', rq) end
if #fresh > 0 then
  local room = window - unread(KEYS[5], 'fetch', window, ARGV[5])
  if #fresh > 1 then table.sort(fresh, function(a, b) return a[1] < b[1] end) end
  for j, r in ipairs(fresh) do
    if j <= room then
      -- The request's own sequence number (unique in the crawl) names the message.
      redis.call('XADD', KEYS[5], '*', '_watermill_message_uuid', 'sc-' .. r[3], 'metadata', '', 'payload', r[2])
    else
      redis.call('ZADD', KEYS[2], r[1], r[2])
    end
  end
end
return {rq, rd, over}
`

// reserveScript takes up to n of the crawl's max_pages budget (partitioned crawls: each
// partition's emit script spends what the call reserved, and the caller gives back
// what it did not spend). A process dying between the two loses at most one page's
// reservation from the budget.
//
// KEYS[1] -> sc:{c}:stats (crawl-wide)
// ARGV[1] -> n, ARGV[2] -> max_pages
// Output: the number reserved
var reserveScript = redis.NewScript(`
local used = tonumber(redis.call('HGET', KEYS[1], 'max_pages_used') or '0')
local take = math.max(0, math.min(tonumber(ARGV[1]), tonumber(ARGV[2]) - used))
if take > 0 then redis.call('HINCRBY', KEYS[1], 'max_pages_used', take) end
return take
`)

// Enqueue queues the candidates not seen before and returns how many it queued.
func (f *Frontier) Enqueue(ctx context.Context, cands []Candidate) (int, error) {
	e, err := f.Emit(ctx, cands, nil)
	return e.Requests, err
}

// Emit is EmitFrom partition 0 (the only one of a crawl of one partition).
func (f *Frontier) Emit(ctx context.Context, cands []Candidate, items []ItemOut) (Emitted, error) {
	return f.EmitFrom(ctx, 0, cands, items)
}

// EmitFrom queues the requests not seen before, each in the partition of its host (one
// script call per partition, made only when some are not known in process to be
// seen), and appends the items whose keys were not emitted before to the items stream
// of partition part, the page's own (see EmitItems), all at the same time.
func (f *Frontier) EmitFrom(ctx context.Context, part int, cands []Candidate, items []ItemOut) (Emitted, error) {
	var e Emitted
	itemsDone := make(chan error, 1)
	go func() {
		var err error
		e.Items, e.DuplicateItems, err = f.EmitItems(ctx, part, items)
		itemsDone <- err
	}()
	var err error
	e.Requests, e.DuplicateRequests, e.OverLimit, err = f.emitRequests(ctx, cands)
	if ierr := <-itemsDone; err == nil {
		err = ierr
	}
	return e, err
}

// emitRequests splits cands by partition and queues each share.
func (f *Frontier) emitRequests(ctx context.Context, cands []Candidate) (queued, dups, over int, err error) {
	if f.layout.N() == 1 {
		return f.emitPart(ctx, 0, cands)
	}
	byPart := map[int][]Candidate{}
	for _, c := range cands {
		p := f.layout.PartitionOf(c.Host)
		byPart[p] = append(byPart[p], c)
	}
	if len(byPart) == 1 {
		for p, cs := range byPart {
			return f.emitPart(ctx, p, cs)
		}
	}
	type result struct {
		q, d, o int
		err     error
	}
	results := make(chan result, len(byPart))
	for p, cs := range byPart {
		go func() {
			var r result
			r.q, r.d, r.o, r.err = f.emitPart(ctx, p, cs)
			results <- r
		}()
	}
	for range byPart {
		r := <-results
		queued, dups, over = queued+r.q, dups+r.d, over+r.o
		if r.err != nil && err == nil {
			err = r.err
		}
	}
	return queued, dups, over, err
}

// emitPart runs the emit script for the candidates of partition part.
func (f *Frontier) emitPart(ctx context.Context, part int, cands []Candidate) (queued, dups, over int, err error) {
	const head = 7
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
	n := (len(args) - head) / 3
	if n == 0 {
		return 0, dups, 0, nil
	}
	mode := "lag"
	if f.countUnread {
		mode = "range"
	}
	limit, budget := f.maxRequests, 0
	if limit > 0 && f.layout.N() > 1 {
		if limit, err = f.reserve(ctx, n); err != nil {
			return 0, 0, 0, err
		}
		if limit == 0 {
			return 0, dups, n, nil
		}
		budget = 1
	}
	args[0], args[1], args[2], args[3], args[4], args[5], args[6] = n, limit, f.order.sign(), f.window, mode, f.revisit.Milliseconds(), budget
	k := f.layout.Part(part)
	keys := []string{k.Seen(), k.Frontier(), k.Stats(), k.Seq(), k.Requests(), k.SeenAt()}
	cmd, err := f.b.do(ctx, func(ctx context.Context, p redis.Pipeliner) redis.Cmder {
		return f.emit.EvalSha(ctx, p, keys, args...)
	})
	if isNoScript(err) {
		// Redis lost its script cache (restart): load it and go again.
		cmd = f.emit.Run(ctx, f.rdb, keys, args...)
		err = cmd.Err()
	}
	if err != nil {
		return 0, 0, 0, fmt.Errorf("streams: enqueue %d requests: %w", n, err)
	}
	res, err := cmd.(*redis.Cmd).Int64Slice()
	if err != nil || len(res) != 3 {
		return 0, 0, 0, fmt.Errorf("streams: enqueue reply %v: %w", res, err)
	}
	if budget == 1 && res[0] < limit {
		// Give back the unspent reservation. Best effort: the requests are queued, and a
		// failure here only leaves some of the budget unspent.
		_ = f.rdb.HIncrBy(ctx, f.layout.Global().Stats(), "max_pages_used", res[0]-limit).Err()
	}
	if f.seen != nil {
		for _, fp := range sent {
			f.seen.add(fp) // queued now or seen before: either way it is in the set
		}
	}
	return int(res[0]), dups + int(res[1]), int(res[2]), nil
}

// reserve takes up to n of the crawl-wide max_pages budget.
func (f *Frontier) reserve(ctx context.Context, n int) (int64, error) {
	take, err := reserveScript.Run(ctx, f.rdb, []string{f.layout.Global().Stats()}, n, f.maxRequests).Int64()
	if err != nil {
		return 0, fmt.Errorf("streams: reserve max_pages budget: %w", err)
	}
	return take, nil
}

// EmitItems appends the items whose keys were not emitted before to the items stream of
// partition part with plain pipelined commands (a Lua call would cost Redis ~15 µs more
// per page): one SMISMEMBER of the keys, then one pipeline of the new items' XADDs
// followed by the SADD of their keys. A crash, or a twin page parsed at the same moment,
// between the two round trips can only add an item twice (bounded; sinks skip it); a
// key is never recorded while its item is not in the stream. Items without a key are
// always added.
func (f *Frontier) EmitItems(ctx context.Context, part int, items []ItemOut) (added, dups int, err error) {
	if len(items) == 0 {
		return 0, 0, nil
	}
	k := f.layout.Part(part)
	var keyed []any
	for _, it := range items {
		if len(it.Key) > 0 {
			keyed = append(keyed, string(it.Key))
		}
	}
	known := map[string]bool{}
	if len(keyed) > 0 {
		cmd, err := f.b.do(ctx, func(ctx context.Context, p redis.Pipeliner) redis.Cmder {
			return p.SMIsMember(ctx, k.ItemKeys(), keyed...)
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
			xadds[i] = p.XAdd(ctx, &redis.XAddArgs{Stream: k.Items(), Values: v})
		}
		if len(fresh) == 0 {
			return xadds[len(xadds)-1]
		}
		return p.SAdd(ctx, k.ItemKeys(), fresh...)
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
	meta := f.layout.Global().Meta()
	err := f.rdb.HSetNX(ctx, meta, "seeded_at", time.Now().UTC().Format(time.RFC3339)).Err()
	if err == nil {
		err = f.rdb.HSet(ctx, meta, "spider", spider).Err()
	}
	if err != nil {
		return fmt.Errorf("streams: mark crawl seeded: %w", err)
	}
	return nil
}

// Layout returns the crawl's layout.
func (f *Frontier) Layout() Layout { return f.layout }

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
