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

	"github.com/streamcrawl/streamcrawl/streams/dedup"
	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"
)

// How an emit reaches Redis: the frontier's group commit gathers the shares of pages
// parsed at about the same time, and flush runs them as one call of the emit script per
// partition (emit_lua.go).

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
	items []any    // key, payload, message ID, record, expected record, records hash per item
	out   string   // the script's outcome bytes for this share: requests, then items
	err   error
}

func (s *emitShare) nreqs() int  { return len(s.reqs) / 5 }
func (s *emitShare) nitems() int { return len(s.items) / emitItemArgs }
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
		bargs, err := f.budgetArgs(ctx, c)
		if c.err = err; err != nil {
			continue
		}
		c.limit = f.cfg.MaxRequests
		if c.limit > 0 && len(f.layout.Parts) > 1 && c.n > 0 {
			if c.limit, c.err = f.reserve(ctx, c.n); c.err != nil {
				continue
			}
			c.budget = 1
		}
		a := make([]any, 0, emitHead+5*c.n+emitItemArgs*c.m+len(bargs))
		window := 0
		if f.cfg.EmitHandsOut {
			window = f.cfg.Window
		}
		itemSet := 0
		if c.m > 0 {
			if itemSet, c.err = f.itemKeysInSet(ctx, c.part); c.err != nil {
				continue
			}
		}
		a = append(a, schedArgs(f.hosts, partIDPrefix(c.part), window, f.cfg.CountUnread, f.order.sign(),
			c.n, c.limit, f.cfg.Revisit.Milliseconds(), c.budget, c.m, itemSet)...)
		for _, s := range c.shares {
			a = append(a, s.reqs...)
		}
		for _, s := range c.shares {
			a = append(a, s.items...)
		}
		a = append(a, bargs...)
		k := f.layout.Parts[c.part]
		c.call = &rkit.Call{Script: f.emit, Args: a, Keys: schedKeys(k, k.Seen, k.Stats, k.SeenAt, k.Items, k.ItemKeys, k.Budget, k.BudgetTop)}
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
	// reserved is what the call reserved per budget key of the crawl-wide host budget
	// counters (nil: none, see budgetArgs), keyOf the budget key of each of its hosts.
	reserved map[string]int64
	keyOf    map[string]string
	call     *rkit.Call
	err      error
}

// finishEmit hands c's outcomes to its shares and gives back what it reserved of the
// max_pages budget and the host budgets and did not spend.
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
	f.giveBackBudget(ctx, c, out[:c.n])
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

// itemKeysInSet returns 1 when partition part keeps its item keys in a set from before
// they went into buckets (see dedup.Deduper.Lua), else 0, as the emit script takes it.
// Redis is asked once per partition in a process's life.
func (f *Frontier) itemKeysInSet(ctx context.Context, part int) (int, error) {
	switch f.itemSet[part].Load() {
	case 1:
		return 0, nil
	case 2:
		return 1, nil
	}
	set, err := dedup.ItemKeysInSet(ctx, f.rdb, f.layout.Parts[part].ItemKeys)
	if err != nil {
		return 0, fmt.Errorf("frontier: emit: %w", err)
	}
	if set {
		f.itemSet[part].Store(2)
		return 1, nil
	}
	f.itemSet[part].Store(1)
	return 0, nil
}

// reserve takes up to n of the crawl-wide max_pages budget.
func (f *Frontier) reserve(ctx context.Context, n int) (int64, error) {
	take, err := reserveScript.Run(ctx, f.rdb, []string{f.layout.Global.Stats}, n, f.cfg.MaxRequests).Int64()
	if err != nil {
		return 0, fmt.Errorf("frontier: reserve max_pages budget: %w", err)
	}
	return take, nil
}

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
