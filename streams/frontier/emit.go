package frontier

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"
)

// One emit, in one file: Emit splits a page's requests and items into shares, one per
// partition; the frontier's group commit gathers the shares of pages parsed at about
// the same time, and flush runs them as one call of the emit script per partition,
// composed here (newEmitScript) from the crawl's dedup snippet, the shared Lua and the
// host scheduler's functions (hostsched_lua.go).

// Candidate is a request offered to the frontier.
type Candidate struct {
	// Fingerprint identifies the request (see spiders.Fingerprint). Empty means "do not
	// filter": the request is queued even if seen (retries, recrawls).
	Fingerprint []byte
	// Payload is the encoded request (spiders.MarshalRequest). It may be left nil when
	// URL is set.
	Payload []byte
	// URL and Callback, when URL is set, say that the request has no other field than
	// its URL, callback, priority and depth (no method, headers, body, meta, retries):
	// its host's queue then keeps it in a compact form of a few bytes beside its path
	// (entry.go), and the frontier writes its JSON itself when it hands it out.
	URL, Callback string
	// Priority and Depth of the request place it in the frontier (see Config.Order).
	Priority, Depth int
	// Host is the key of the request URL's host (spiders.HostKey); it picks the
	// partition and the host queue.
	Host string
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
	// Requests were queued; DuplicateRequests were seen before.
	Requests, DuplicateRequests int
	// Items were added to the items stream; DuplicateItems had a key emitted before.
	Items, DuplicateItems int
	// OverLimit counts requests dropped because the crawl reached max_pages.
	OverLimit int
}

// Emit queues the requests not seen before, each in the partition of its host, and
// appends the items whose keys were not emitted before to the items stream of partition
// part (the page's own; 0 in a crawl of one partition), all at the same time. Requests
// known in process to be seen are dropped before Redis. The rest goes to the emit
// queue, which runs one script call per partition for the pages parsed at about the
// same time (see flush); in each, dedup and enqueue are one step, and an item's key is
// recorded in the step that appends it (two pages yielding the same item at the same
// moment add it once; items without a key are always added).
func (f *Frontier) Emit(ctx context.Context, part int, cands []Candidate, items []ItemOut) (Emitted, error) {
	var e Emitted
	var shares []*emitShare
	// share returns the share of partition p that the next request goes in: a page's
	// requests of one partition go in chunks of at most maxEmitChunk, each its own
	// script call, so a page with a huge number of links never blocks Redis for long.
	share := func(p int) *emitShare {
		for i := len(shares) - 1; i >= 0; i-- {
			if s := shares[i]; s.part == p {
				if s.nreqs() < maxEmitChunk {
					return s
				}
				break
			}
		}
		s := &emitShare{part: p}
		shares = append(shares, s)
		return s
	}
	for _, c := range cands {
		if len(c.Fingerprint) > 0 && f.seen != nil && f.seen.has(c.Fingerprint) {
			e.DuplicateRequests++
			continue
		}
		host := c.Host
		p := 0
		if len(f.layout.Parts) > 1 {
			p = f.layout.PartitionOf(host)
		}
		s := share(p)
		var fp, rule string
		if len(c.Fingerprint) > 0 {
			fp = f.fpArg(c.Fingerprint)
		}
		if f.cfg.Rules != nil {
			if r := f.cfg.Rules(host); r != nil {
				rule = r.arg()
			}
		}
		s.reqs = append(s.reqs, fp, f.order.band(c.Priority, c.Depth), entryOf(&c), host, rule)
		s.fps = append(s.fps, c.Fingerprint)
	}
	if len(items) > 0 {
		s := share(part)
		for _, it := range items {
			s.items = append(s.items, string(it.Key), string(it.Payload), nextMessageID())
		}
	}
	var err error
	var queued []*emitShare
	var waits []<-chan struct{}
	for _, s := range shares {
		wait, serr := f.queue.Submit(ctx, s)
		if err = serr; err != nil {
			break
		}
		queued, waits = append(queued, s), append(waits, wait)
	}
	for i, s := range queued {
		<-waits[i]
		if s.err != nil {
			if err == nil {
				err = s.err
			}
			continue
		}
		f.count(&e, s)
	}
	return e, err
}

// count adds a share's outcomes to e and remembers its seen fingerprints.
func (f *Frontier) count(e *Emitted, s *emitShare) {
	for i := 0; i < len(s.out); i++ {
		isReq, c := i < s.nreqs(), s.out[i]
		switch {
		case isReq && c == 'q':
			e.Requests++
		case isReq && c == 'o':
			e.OverLimit++
		case isReq:
			e.DuplicateRequests++
		case c == 'a':
			e.Items++
		default:
			e.DuplicateItems++
		}
		if isReq && c != 'o' && f.seen != nil && len(s.fps[i]) > 0 {
			f.seen.add(s.fps[i]) // queued now or seen before: either way it is in the set
		}
	}
}

// maxEmitArgs bounds the script arguments one coalesced call gathers (a single share
// with more goes alone).
const maxEmitArgs = 2048

// maxEmitChunk is the most requests of one page in one script call: a page with more
// (a sitemap, a directory listing) is queued in several calls, each short enough not to
// hold up Redis for other clients (about 25 µs of Redis time per request to a new host).
const maxEmitChunk = 400

// emitShare is one page's share of one partition's emit: its requests whose hosts fall
// in the partition and, in the page's own partition, its items.
type emitShare struct {
	part  int
	reqs  []any    // fingerprint, score band, entry, host, rule per request
	fps   [][]byte // the requests' fingerprints, for the seen cache (nil: none)
	items []any    // key, payload, message ID per item
	out   string   // the script's outcome bytes for this share: requests, then items
	err   error
}

func (s *emitShare) nreqs() int  { return len(s.reqs) / 5 }
func (s *emitShare) nitems() int { return len(s.items) / 3 }
func (s *emitShare) args() int   { return len(s.reqs) + len(s.items) }

// flush runs a batch of shares (the emits of pages parsed at about the same time,
// gathered by the frontier's group commit): one emit script call per partition, all in
// one pipeline, and hands each share its outcomes. A script call costs Redis a fixed
// ~10–50 µs (more when the call wakes it) on top of the commands it runs, and most
// pages find one or two new links, so one call for several pages costs Redis a fraction
// of one per page. A page waits for its own share's outcome, so it never learns "done"
// before Redis has its requests and items.
func (f *Frontier) flush(ctx context.Context, batch []*emitShare) {
	var calls []*partCall
	byPart := map[int]*partCall{}
	for _, s := range batch {
		c := byPart[s.part]
		if c == nil {
			c = &partCall{part: s.part}
			byPart[s.part] = c
			calls = append(calls, c)
		}
		c.shares = append(c.shares, s)
		c.n += s.nreqs()
		c.m += s.nitems()
	}
	var run []*rkit.Call
	for _, c := range calls {
		c.limit = f.cfg.MaxRequests
		if c.limit > 0 && len(f.layout.Parts) > 1 && c.n > 0 {
			if c.limit, c.err = f.reserve(ctx, c.n); c.err != nil {
				continue
			}
			c.budget = 1
		}
		a := make([]any, 0, emitHead+5*c.n+3*c.m)
		window := 0
		if f.cfg.EmitHandsOut {
			window = f.cfg.Window
		}
		a = append(a, schedArgs(f.hosts, partIDPrefix(c.part), window, f.cfg.CountUnread, f.order.sign(),
			c.n, c.limit, f.cfg.Revisit.Milliseconds(), c.budget, c.m)...)
		for _, s := range c.shares {
			a = append(a, s.reqs...)
		}
		for _, s := range c.shares {
			a = append(a, s.items...)
		}
		k := f.layout.Parts[c.part]
		c.call = &rkit.Call{Script: f.emit, Args: a, Keys: schedKeys(k, k.Seen, k.Stats, k.SeenAt, k.Items, k.ItemKeys)}
		run = append(run, c.call)
	}
	rkit.Exec(ctx, f.rdb, run)
	for _, c := range calls {
		if c.err == nil {
			c.err = c.call.Reply.Err()
		}
		f.finishEmit(ctx, c)
	}
}

// partCall is one partition's script call in a flush.
type partCall struct {
	part   int
	shares []*emitShare
	n, m   int
	limit  int64
	budget int
	call   *rkit.Call
	err    error
}

// finishEmit hands c's outcomes to its shares and gives back an unspent max_pages budget.
func (f *Frontier) finishEmit(ctx context.Context, c *partCall) {
	defer func() {
		if c.err != nil {
			for _, s := range c.shares {
				s.err = c.err
			}
		}
	}()
	if c.err != nil {
		c.err = fmt.Errorf("frontier: emit %d requests and %d items: %w", c.n, c.m, c.err)
		return
	}
	out, err := c.call.Reply.(*redis.Cmd).Text()
	if err != nil || len(out) != c.n+c.m {
		c.err = fmt.Errorf("frontier: emit reply %q for %d requests and %d items: %v", out, c.n, c.m, err)
		return
	}
	reqs, items := out[:c.n], out[c.n:]
	for _, s := range c.shares {
		s.out = reqs[:s.nreqs()] + items[:s.nitems()]
		reqs, items = reqs[s.nreqs():], items[s.nitems():]
	}
	if c.budget == 1 {
		if spent := int64(strings.Count(out[:c.n], "q")); spent < c.limit {
			// Give back the unspent reservation. Best effort: the requests are queued, and
			// a failure here only leaves some of the budget unspent.
			_ = f.rdb.HIncrBy(ctx, f.layout.Global.Stats, "max_pages_used", spent-c.limit).Err()
		}
	}
}

// reserve takes up to n of the crawl-wide max_pages budget.
func (f *Frontier) reserve(ctx context.Context, n int) (int64, error) {
	take, err := reserveScript.Run(ctx, f.rdb, []string{f.layout.Global.Stats}, n, f.cfg.MaxRequests).Int64()
	if err != nil {
		return 0, fmt.Errorf("frontier: reserve max_pages budget: %w", err)
	}
	return take, nil
}

// newEmitScript composes the emit script: the crawl's dedup snippet (seenAdd, which
// defines seen_add_arg), the shared Lua and the host scheduler's functions, then
// emitBody.
func newEmitScript(seenAdd string) *redis.Script {
	return schedScript(seenAdd, emitHeadLua+emitBody)
}

// setSeenAdd is seen_add_arg over a plain set, for frontiers without a Deduper.
const setSeenAdd = `
local function seen_add_arg(base, fp) return redis.call('SADD', base, fp) end
`

// emitBody (run as the Frontier's emit script, after the crawl's seen_add_arg from its
// Deduper and the host scheduler, see schedScript) queues the new requests and items of
// one partition found by one or more parsed pages, in one step: a new fingerprint goes
// into the seen set and its request into its host's queue, and an item whose key is new
// goes into the items stream with its key recorded, so a crash can never leave a URL or
// an item key marked seen but not queued. The new requests of an idle host (nothing
// waiting, in flight or scheduled) go straight to the requests stream as far as the
// window and the host's free slots allow (hand_direct); the others wake their hosts
// (see hostSchedLua), and when the window still has room, ready hosts' requests are
// handed out at once, so idle fetchers get work without waiting for a dispatcher round.
// Every key is the partition's; the partition's counters count the fingerprints
// recorded new, the requests queued and the items added.
//
// Each redis.call costs Redis a few µs beyond the command it runs: the caller passes
// each fingerprint in the form its dedup mode stores, a host's state is read once and
// written once, and item keys are checked with one SMISMEMBER and recorded with one
// SADD.
//
// KEYS[1..9], ARGV[1..10] -> schedKeys, schedArgs (see hostSchedLua; the window is
// the dispatch window, 0: do not hand out)
// KEYS[10] -> sc:{c}:seen (the base key of the crawl's dedup: a set, buckets or a Bloom
// filter)
// KEYS[11] -> sc:{c}:stats (the partition's: max_pages_used of a crawl of one partition)
// KEYS[12] -> sc:{c}:seenat (fingerprint -> when queued, ms; used instead of the seen
// set when revisiting)
// KEYS[13] -> sc:{c}:items
// KEYS[14] -> sc:{c}:itemkeys
// ARGV[11] -> number of requests n, ARGV[12] -> max requests ever queued (0: no limit),
// ARGV[13] -> revisit interval in ms (0: a URL is seen forever),
// ARGV[14] -> 1 when ARGV[12] is a budget reserved for this call in the crawl-wide
// counter (partitioned crawls; 0 then means none) rather than a limit on KEYS[11]'s
// max_pages_used, ARGV[15] -> number of items m;
// then per request: fingerprint (empty: do not filter; the dedup's script argument, or
// the raw fingerprint when revisiting), score band, entry (entry.go), host (its key,
// spiders.HostKey), the host's limit rule ("<concurrency> <delay ms>"; empty: the
// defaults);
// then per item: key (empty: do not filter), payload, message ID
// Output: one byte per request ('q' queued, 'd' duplicate, 'o' over max_pages), then
// one per item ('a' added, 'd' duplicate key)
const emitBody = `
local n, limit, revisit = tonumber(ARGV[11]), tonumber(ARGV[12]), tonumber(ARGV[13])
local budget, m = ARGV[14] == '1', tonumber(ARGV[15])
local first, items = emit_head + 1, emit_head + 1 + 5 * n
local now = 0
if revisit > 0 then now = now_ms() end
-- is_new records fp as seen and reports whether it was not (or was seen too long ago).
local function is_new(fp)
  if fp == '' then return true end
  if revisit == 0 then return seen_add_arg(KEYS[10], fp) == 1 end
  local at = redis.call('HGET', KEYS[12], fp)
  if at and now - tonumber(at) < revisit then return false end
  redis.call('HSET', KEYS[12], fp, now)
  return true
end
-- in_set returns, per element of list, whether it is in set key; add_all adds them.
-- Both go a thousand at a time (Lua's unpack has a stack limit).
local function in_set(key, list)
  local out = {}
  for i = 1, #list, 1000 do
    for _, r in ipairs(redis.call('SMISMEMBER', key, unpack(list, i, math.min(i + 999, #list)))) do out[#out + 1] = r == 1 end
  end
  return out
end
local function add_all(key, list)
  for i = 1, #list, 1000 do redis.call('SADD', key, unpack(list, i, math.min(i + 999, #list))) end
end
local out = {}
local rq, queued, fps = 0, 0, 0
if limit > 0 and not budget then queued = tonumber(redis.call('HGET', KEYS[11], 'max_pages_used') or '0') end
local fresh = {}
for k = 1, n do
  local i = first + 5 * (k - 1)
  if (budget or limit > 0) and queued + rq >= limit then
    out[k] = 'o'
  elseif is_new(ARGV[i]) then
    fresh[#fresh + 1] = i
    rq = rq + 1
    if ARGV[i] ~= '' then fps = fps + 1 end
    out[k] = 'q'
  else
    out[k] = 'd'
  end
end
-- max_pages_used is exact (max_pages reads it); the other counters are the caller's.
if rq > 0 and limit > 0 and not budget then redis.call('HINCRBY', KEYS[11], 'max_pages_used', rq) end
count('seen', fps)
count('queued', rq)
if #fresh > 0 then
  local byhost, hosts = {}, {}
  for j, i in ipairs(fresh) do
    local band, host = tonumber(ARGV[i + 1]), ARGV[i + 3]
    local h = byhost[host]
    if not h then
      h = {band = band, rule = ARGV[i + 4], reqs = {}}
      byhost[host] = h
      hosts[#hosts + 1] = host
    elseif band < h.band then
      h.band = band
    end
    h.reqs[#h.reqs + 1] = {band, ARGV[i + 2], j}
  end
  if #hosts > 1 then table.sort(hosts, function(a, b) return byhost[a].band < byhost[b].band end) end
  local window, left = S.window, nil
  local function room_left()
    if left == nil then
      left = room(math.huge)
      if now == 0 then now = now_ms() end
    end
    return left
  end
  for _, host in ipairs(hosts) do
    local h = byhost[host]
    local st = state(host)
    activate(host, st, h.rule)
    local before = best_band(st)
    local idle = before == nil and st.f == 0 and not zscore(S.sched, host)
    local sent = 0
    if idle and window > 0 and room_left() > 0 then
      sent = hand_direct(host, st, h.reqs, left, now)
      left = left - sent
    end
    if sent < #h.reqs then
      -- The others into the host's queues, band by band, in order of discovery.
      local byband, bands = {}, {}
      for x = sent + 1, #h.reqs do
        local r = h.reqs[x]
        local l = byband[r[1]]
        if not l then
          l = {}
          byband[r[1]] = l
          bands[#bands + 1] = r[1]
        end
        l[#l + 1] = r
      end
      for _, b in ipairs(bands) do
        local l = byband[b]
        table.sort(l, function(x, y) return x[3] < y[3] end)
        local es = {}
        for y, r in ipairs(l) do es[y] = r[2] end
        enqueue(host, st, b, es)
      end
    end
    if sent > 0 then
      local conc, delay = rule(st)
      after_start(host, st, conc, delay, sent, now)
    elseif idle then
      place(host, st)
    else
      wake(host, st, h.band, before)
    end
  end
  if window > 0 then
    zflush(S.ready)
    if redis.call('ZCARD', S.ready) > 0 and room_left() > 0 then hand_out(left, now) end
  end
end
if m > 0 then
  local keyed = {}
  for i = items, items + 3 * m - 1, 3 do
    if ARGV[i] ~= '' then keyed[#keyed + 1] = ARGV[i] end
  end
  local known, fresh_keys = {}, {}
  if #keyed > 0 then
    for j, yes in ipairs(in_set(KEYS[14], keyed)) do
      if yes then known[keyed[j]] = true end
    end
  end
  local added = 0
  for i = items, items + 3 * m - 1, 3 do
    local key = ARGV[i]
    if key ~= '' and known[key] then
      out[#out + 1] = 'd'
    else
      if key ~= '' then
        known[key] = true -- the same key twice in this call
        fresh_keys[#fresh_keys + 1] = key
      end
      xadd_msg(KEYS[13], ARGV[i + 2], ARGV[i + 1])
      out[#out + 1] = 'a'
      added = added + 1
    end
  end
  -- After the XADDs: were the script cut short (OOM), no key is recorded without its item.
  if #fresh_keys > 0 then add_all(KEYS[14], fresh_keys) end
  count('items', added)
end
commit()
return table.concat(out)
`

// emitHead is the number of ARGV before the requests in the emit script.
const emitHead = schedHead + 5

// emitHeadLua tells the emit script emitHead.
var emitHeadLua = "local emit_head = " + strconv.Itoa(emitHead) + "\n"

// reserveScript takes up to n of the crawl's max_pages budget (partitioned crawls: each
// partition's emit script spends what the call reserved, and the caller gives back
// what it did not spend). A process dying between the two loses at most one call's
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

// nextMessageID returns a message ID unique in the crawl: this process's random prefix
// and a counter.
func nextMessageID() string {
	return idPrefix + strconv.FormatUint(idCounter.Add(1), 36)
}

var (
	idPrefix  = "sc-" + randomHex(6) + "-"
	idCounter atomic.Uint64
)

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand panics rather than return an error)
	return hex.EncodeToString(b)
}
