package frontier

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/streamcrawl/streamcrawl/streams/dedup"
	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"

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
	// Host is the request URL's host (name or name:port, as in the URL); its NormalHost
	// picks the partition and the host queue.
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
	// Window is the dispatch window (see DispatcherConfig.Window): while the requests
	// stream has fewer unread entries than this, an emit hands requests of ready hosts
	// out itself (an idle host's new ones straight, without a trip through its queue),
	// so they reach idle fetchers at once. 0 leaves handing out to the Dispatcher.
	Window int
	// CountUnread: see DispatcherConfig.CountUnread.
	CountUnread bool
	// Dedup is the crawl's duplicate filter (dedup.Open); nil means a plain set.
	Dedup *dedup.Deduper
	// Revisit lets a URL be queued again once it was last queued this long ago (crawls
	// that run every day). Its fingerprints then live in a hash with their time instead
	// of the seen set. 0: a URL is seen forever.
	Revisit time.Duration
	// Linger is how long a page's emit waits for other pages' emits to share one script
	// call (see Frontier.flush). Default DefaultEmitLinger; negative: no wait.
	Linger time.Duration
	// Hosts is the crawl's default per-host politeness, which requests handed out by
	// an emit obey. Its zero value: no limits.
	Hosts HostDefaults
	// Rules returns the politeness of a host (NormalHost) that has a rule of its own
	// (the spider's limits), nil for the defaults. Nil: every host has the defaults.
	Rules func(host string) *HostRule
}

// Frontier deduplicates and queues requests and items. Dedup and enqueue are one Lua
// script, so a crash never leaves a URL or an item key marked seen but not queued.
type Frontier struct {
	rdb         redis.UniversalClient
	layout      Layout
	queue       *rkit.Group[*emitShare]
	seen        *seenCache
	order       Order
	maxRequests int64
	window      int
	countUnread bool
	revisit     time.Duration
	emit        *redis.Script
	fpArg       func(fp []byte) string // a fingerprint as the emit script takes it
	hosts       HostDefaults
	rules       func(host string) *HostRule
}

// NewFrontier returns a Frontier.
func NewFrontier(cfg FrontierConfig) (*Frontier, error) {
	if cfg.Client == nil {
		return nil, errors.New("frontier: frontier needs a redis client")
	}
	if cfg.Layout.N() == 0 {
		cfg.Layout = NewLayout(cfg.Keys.Crawl(), 1)
	}
	if cfg.Layout.Crawl() == "" {
		return nil, errors.New("frontier: frontier needs a crawl name")
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
	cfg.Linger = cmp.Or(cfg.Linger, DefaultEmitLinger)
	cfg.Hosts.setDefaults()
	f := &Frontier{rdb: cfg.Client, layout: cfg.Layout,
		order: cfg.Order, maxRequests: cfg.MaxRequests, window: cfg.Window, countUnread: cfg.CountUnread,
		revisit: cfg.Revisit, hosts: cfg.Hosts, rules: cfg.Rules}
	seenAdd := setSeenAdd
	f.fpArg = func(fp []byte) string { return string(fp) }
	if cfg.Dedup != nil {
		seenAdd = cfg.Dedup.LuaSeenAdd()
		if cfg.Revisit == 0 { // revisited URLs' fingerprints go to the seenat hash as they are
			f.fpArg = cfg.Dedup.ScriptArg
		}
	}
	f.emit = newEmitScript(seenAdd)
	if cfg.SeenCache > 0 && cfg.Revisit == 0 { // revisited URLs must reach the script
		f.seen = newSeenCache(cfg.SeenCache)
	}
	f.queue = rkit.NewGroup(rkit.GroupConfig[*emitShare]{Max: maxEmitArgs, Size: (*emitShare).args,
		Linger: cfg.Linger, Timeout: rkit.WriteTimeout, Flush: f.flush})
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
	// OverLimit counts requests dropped because the crawl reached max_pages.
	OverLimit int
}

// Enqueue queues the candidates not seen before and returns how many it queued.
func (f *Frontier) Enqueue(ctx context.Context, cands []Candidate) (int, error) {
	e, err := f.Emit(ctx, cands, nil)
	return e.Requests, err
}

// Emit is EmitFrom partition 0 (the only one of a crawl of one partition).
func (f *Frontier) Emit(ctx context.Context, cands []Candidate, items []ItemOut) (Emitted, error) {
	return f.EmitFrom(ctx, 0, cands, items)
}

// EmitFrom queues the requests not seen before, each in the partition of its host, and
// appends the items whose keys were not emitted before to the items stream of partition
// part, the page's own, all at the same time. Requests known in process to be seen
// are dropped before Redis. The rest goes to the emit queue, which runs one script
// call per partition for the pages parsed at about the same time (see flush); in
// each, dedup and enqueue are one step.
func (f *Frontier) EmitFrom(ctx context.Context, part int, cands []Candidate, items []ItemOut) (Emitted, error) {
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
		host := NormalHost(c.Host)
		p := 0
		if f.layout.N() > 1 {
			p = f.layout.PartitionOf(host)
		}
		s := share(p)
		var fp, rule string
		if len(c.Fingerprint) > 0 {
			fp = f.fpArg(c.Fingerprint)
		}
		if f.rules != nil {
			if r := f.rules(host); r != nil {
				rule = r.arg()
			}
		}
		s.reqs = append(s.reqs, fp, f.order.band(c.Priority, c.Depth), string(c.Payload), host, rule)
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

// EmitItems appends the items whose keys were not emitted before to the items stream of
// partition part (EmitFrom without requests). An item's key is recorded in the same
// script step that appends it, so a key is never recorded while its item is not in the
// stream, and two pages yielding the same item at the same moment add it once. Items
// without a key are always added.
func (f *Frontier) EmitItems(ctx context.Context, part int, items []ItemOut) (added, dups int, err error) {
	e, err := f.EmitFrom(ctx, part, nil, items)
	return e.Items, e.DuplicateItems, err
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
		return fmt.Errorf("frontier: mark crawl seeded: %w", err)
	}
	return nil
}

// Layout returns the crawl's layout.
func (f *Frontier) Layout() Layout { return f.layout }

// Close stops the frontier's batcher.
func (f *Frontier) Close() { f.queue.Close() }
