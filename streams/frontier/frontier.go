package frontier

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/dedup"
	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"
	"github.com/streamcrawl/streamcrawl/streams/loop"
)

// Defaults of Config.
const (
	defaultWindow        = 128
	defaultInterval      = 20 * time.Millisecond
	defaultIdleInterval  = 100 * time.Millisecond
	defaultRetryInterval = 100 * time.Millisecond
	defaultLeaseTTL      = 60 * time.Second
	defaultQuantum       = 16
	defaultSeenCache     = 1 << 18
	// defaultLinger is how long the first page's emit waits for other pages' emits to
	// share its script call.
	defaultLinger = 10 * time.Millisecond
	// defaultRevisitURLs is Config.RevisitURLs's default (the spiders' capacity default).
	defaultRevisitURLs = 10_000_000
	// maxHostBackoff bounds how long a host is pushed back after repeated 429/503, its
	// Retry-After included.
	maxHostBackoff = 10 * time.Minute
)

// Config configures a crawl's Frontier.
type Config struct {
	// Client is the Redis client; the Frontier does not close it.
	Client redis.UniversalClient
	// Layout of the crawl (streams.OpenLayout).
	Layout streams.Layout
	// Order is the order requests are handed out in: "priority" (higher priority first;
	// the default), "breadth-first" (shallower first, then higher priority) or
	// "depth-first" (deeper first). Within one band requests keep their order of
	// discovery (depth-first: the newest first).
	Order string
	// Hosts is the politeness of every host without a rule of its own. Zero: no limits.
	Hosts HostRule
	// Rules returns the politeness of a host (its key) that has a rule of its own (the
	// spider's limits), nil for Hosts. Nil: every host has Hosts.
	Rules func(host string) *HostRule
	// LeaseTTL bounds how long a host's slot stays taken when its fetcher died without
	// giving it back; set it above the download timeout. Default 60s.
	LeaseTTL time.Duration
	// Quantum is the most requests of one host without limits handed out per turn, so
	// hosts of one band take turns even when one has a huge backlog. Default 16.
	Quantum int
	// Window is the most requests left unread in the requests stream: the frontier keeps
	// the rest, in order, so a high-priority request seeded mid-crawl waits behind at
	// most Window others. Default 128.
	Window int
	// EmitHandsOut makes an emit hand requests of ready hosts out itself while the
	// requests stream has room in the Window (an idle host's new ones straight, without
	// a trip through its queue), so they reach idle fetchers at once.
	EmitHandsOut bool
	// FinishHandsOut makes Finish hand requests of ready hosts out in the same script
	// call that gives a slot back, within the Window: a freed slot is used at once
	// instead of at the next dispatch round.
	FinishHandsOut bool
	// CountUnread counts the requests stream's unread entries with XRANGE instead of
	// trusting XINFO's lag (needed where lag is unreliable, as in the embedded Redis).
	CountUnread bool
	// Interval between dispatch rounds of Run. Default 20ms.
	Interval time.Duration
	// IdleInterval is the longest wait between dispatch rounds while every partition's
	// frontier is empty (no host ready or scheduled, no lease held): the wait doubles
	// from Interval up to it after each round that finds them empty. Requests queued
	// into an idle frontier are handed out by the emit that queued them. It is also the
	// longest a round leaves one partition alone after finding nothing to move there
	// (see round). Default 100ms (at least Interval).
	IdleInterval time.Duration
	// RetryInterval is how often Run moves due retries back to their hosts' queues.
	// Default 100ms.
	RetryInterval time.Duration
	// MaxRequests stops queueing new requests once this many were ever queued (the
	// spider's max_pages); 0 means no limit.
	MaxRequests int64
	// Budget bounds the requests and bytes of one host or registered domain (see
	// HostBudget). Zero: none.
	Budget HostBudget
	// Revisit lets a URL be queued again once it was last queued this long ago (crawls
	// that run every day). Its fingerprints then live in a hash with their time instead
	// of the seen set. 0: a URL is seen forever.
	Revisit time.Duration
	// Dedup is the crawl's duplicate filter (dedup.Open); nil means a plain set.
	Dedup *dedup.Deduper
	// SeenCache is how many fingerprints known to be in the seen set are remembered in
	// process, so that links every page repeats (navigation) stop costing Redis work.
	// It is a fixed array of 8 bytes a fingerprint, allocated at New: default 262,144
	// (2 MB). Negative disables it.
	SeenCache int
	// ItemRecordBuckets is how many hashes each partition's item records (versioned
	// items, see ItemOut.Record) are spread over; default 1024. Fixed for a crawl's
	// life: another count loses the records (every item comes again as version 1).
	ItemRecordBuckets uint32
	// Linger is how long a page's emit waits for other pages' emits to share one script
	// call (see Frontier.flush). Default 10ms; negative: no wait.
	Linger time.Duration
	// Logger receives Run's failures (rate-limited); nil means no-op.
	Logger *zap.Logger

	// RevisitURLs is how many URLs with revisit rules the crawl is planned for (the
	// spider's capacity): it sizes the revisit-chain hashes (RevisitChain), 64 URLs
	// each. Every process of a crawl must use the same. Default 10,000,000.
	RevisitURLs int64

	// RevisitClockShift moves the revisit schedule's "now" (the Redis clock) ahead, for
	// tests that simulate days of revisits without waiting them. Default 0; production
	// leaves it so.
	RevisitClockShift time.Duration
}

func (c *Config) setDefaults() {
	c.Order = cmp.Or(c.Order, string(orderPriority))
	c.LeaseTTL = cmp.Or(c.LeaseTTL, defaultLeaseTTL)
	c.Quantum = cmp.Or(c.Quantum, defaultQuantum)
	c.Window = cmp.Or(c.Window, defaultWindow)
	c.Interval = cmp.Or(c.Interval, defaultInterval)
	c.IdleInterval = cmp.Or(c.IdleInterval, max(defaultIdleInterval, c.Interval))
	c.RetryInterval = cmp.Or(c.RetryInterval, defaultRetryInterval)
	c.SeenCache = cmp.Or(c.SeenCache, defaultSeenCache)
	c.Linger = cmp.Or(c.Linger, defaultLinger)
	c.RevisitURLs = cmp.Or(c.RevisitURLs, defaultRevisitURLs)
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
}

// validate reports a config that cannot work.
func (c *Config) validate() error {
	switch {
	case c.Client == nil:
		return errors.New("frontier: frontier needs a redis client")
	case len(c.Layout.Parts) == 0 || c.Layout.Crawl == "":
		return errors.New("frontier: frontier needs a crawl layout")
	}
	return order(c.Order).validate()
}

// Frontier is a crawl's host-scheduled frontier in Redis (the Mercator / URLFrontier
// shape, see hostSchedLua): what comes in (Emit: a page's new requests and items, dedup
// and enqueue in one script; TakeSeeds: seeds pushed at runtime), what goes out to the
// fetchers (Run: requests of the hosts that may start one now, into the requests
// stream, and due retries back to their hosts' queues), and the fetchers' side of
// per-host politeness (Finish, Leased, SetCrawlDelay; Retry). State lives in Redis,
// timed by the Redis clock, so N processes are as polite as one; every change is one
// Lua script touching one partition's slot. Any number of Frontiers of one crawl may
// run at once, in any processes.
type Frontier struct {
	cfg    Config
	rdb    redis.UniversalClient
	layout streams.Layout
	order  order
	hosts  hostDefaults

	// emit (emit_lua.go)
	queue *rkit.Group[*emitShare]
	seen  *seenCache
	emit  *redis.Script
	fpArg func(fp []byte) string // a fingerprint as the emit script takes it
	// itemSet is, per partition, whether its item keys are a legacy set: 0 not known
	// yet, 1 no (buckets), 2 yes (see itemKeysInSet)
	itemSet []atomic.Int32

	// the fetchers' side (hosts.go, retries.go)
	pipe         *rkit.Pipeline
	fin          *rkit.Group[*finishJob]
	now          func() time.Time // the clock that turns a retry's due time into a wait
	revisitShift time.Duration    // Config.RevisitClockShift

	// max_pages (budget.go)
	budget budget

	// dispatch (dispatch.go)
	mu   sync.Mutex
	pace []partPace // per partition, under mu
	// wake is per partition whether this process asked the dispatcher to look there
	// in its next round (wakePart).
	wake []atomic.Bool
	// beforeRun, set only by tests (export_test.go), is called before each dispatch
	// script with the window; an error stands for a process killed there.
	beforeRun func(window int) error

	// Run's looks at the delayed retries and the revisit schedule (duepace.go)
	retries, revisits *duePace
}

// New returns the Frontier of the crawl cfg.Layout names. Close it when done.
func New(cfg Config) (*Frontier, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	f := &Frontier{cfg: cfg, rdb: cfg.Client, layout: cfg.Layout, order: order(cfg.Order), now: time.Now, revisitShift: cfg.RevisitClockShift,
		hosts: hostDefaults{HostRule: cfg.Hosts, leaseTTL: cfg.LeaseTTL, quantum: cfg.Quantum},
		pace:  make([]partPace, len(cfg.Layout.Parts)), wake: make([]atomic.Bool, len(cfg.Layout.Parts)), itemSet: make([]atomic.Int32, len(cfg.Layout.Parts)),
		retries: newDuePace(len(cfg.Layout.Parts)), revisits: newDuePace(len(cfg.Layout.Parts))}
	seenAdd := setSeenAdd + dedup.LuaItemSet
	f.fpArg = func(fp []byte) string { return string(fp) }
	if cfg.Dedup != nil {
		seenAdd = cfg.Dedup.Lua()
		if cfg.Revisit == 0 { // revisited URLs' fingerprints go to the seenat hash as they are
			f.fpArg = cfg.Dedup.ScriptArg
		}
	}
	f.emit = newEmitScript(seenAdd)
	if cfg.SeenCache > 0 && cfg.Revisit == 0 && (cfg.Dedup == nil || !cfg.Dedup.Expires()) { // revisited and expiring URLs must reach the script
		f.seen = newSeenCache(cfg.SeenCache)
	}
	f.queue = rkit.NewGroup(rkit.GroupConfig[*emitShare]{Max: maxEmitArgs, Size: (*emitShare).args,
		Linger: cfg.Linger, Timeout: rkit.WriteTimeout, Flush: f.flush})
	f.pipe = rkit.NewPipeline(cfg.Client, 64, rkit.WriteTimeout, rkit.WriteLinger)
	f.fin = rkit.NewGroup(rkit.GroupConfig[*finishJob]{Max: 64, Linger: rkit.WriteLinger, Timeout: rkit.WriteTimeout, Flush: f.finishTurns})
	return f, nil
}

// Known reports whether fp is known in process to be in the seen set already (false
// when the frontier keeps no cache, or revisits URLs): a caller can drop the request
// before encoding it.
func (f *Frontier) Known(fp []byte) bool { return f.seen != nil && f.seen.has(fp) }

// MarkSeeded records that the crawl has been seeded, which "done" requires, and the
// spider's name (the crawl's).
func (f *Frontier) MarkSeeded(ctx context.Context) error {
	meta := f.layout.Global.Meta
	err := f.rdb.HSetNX(ctx, meta, "seeded_at", time.Now().UTC().Format(time.RFC3339)).Err()
	if err == nil {
		err = f.rdb.HSet(ctx, meta, "spider", f.layout.Crawl).Err()
	}
	if err != nil {
		return fmt.Errorf("frontier: mark crawl seeded: %w", err)
	}
	return nil
}

// Run hands requests out until ctx ends, then returns nil: every Interval (less often
// while every partition's frontier is empty, see Config.IdleInterval) it takes back
// the slots of dead fetchers, makes the hosts whose time has come ready and moves
// requests of ready hosts into the requests stream within the Window (dispatch.go),
// and every RetryInterval it moves due retries back to their hosts' queues
// (retries.go) and releases due revisits into them (revisit.go); with a Dedup whose
// fingerprints expire it deletes the expired generations (dedup.Deduper.DropExpired)
// as often. A failed round is logged and tried again. Every fetch process runs
// one; any number may run at once.
func (f *Frontier) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = loop.Every(ctx, f.cfg.RetryInterval, loop.Config{Log: f.cfg.Logger, Msg: "moving delayed requests failed; retrying"}, f.moveAllDue)
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = loop.Every(ctx, f.cfg.RetryInterval, loop.Config{Log: f.cfg.Logger, Msg: "releasing due revisits failed; retrying"},
			func(ctx context.Context) error { return f.releaseRevisits(ctx, true) })
	}()
	if d := f.cfg.Dedup; d != nil && d.Expires() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = loop.Every(ctx, f.cfg.RetryInterval, loop.Config{Log: f.cfg.Logger, Msg: "dropping expired seen generations failed; retrying"},
				func(ctx context.Context) error { _, err := d.DropExpired(ctx); return err })
		}()
	}
	err := f.runDispatch(ctx)
	wg.Wait()
	return err
}

// Forget drops what the frontier knows in process of Redis's state (the fingerprints it
// knows to be seen): after a failover, Redis may have lost some of them with the
// requests they were queued with, and a request dropped as known would never be
// queued again.
func (f *Frontier) Forget() {
	if f.seen != nil {
		f.seen.clear()
	}
}

// Close sends what is queued (emits, finished turns, retries) and stops. Run must have
// returned. ctx's deadline bounds those last writes (rkit.WriteTimeout each when it has
// none); they run even when ctx was cancelled. Each write's outcome goes to the call that
// queued it (an Emit, a Finish); Close returns an error when the deadline passed before
// everything queued was sent.
func (f *Frontier) Close(ctx context.Context) error {
	err := errors.Join(f.queue.Close(ctx), f.fin.Close(ctx), f.pipe.Close(ctx))
	if f.seen != nil {
		lookups, hits := f.seen.stats()
		f.cfg.Logger.Info("frontier: seen cache", zap.Int64("lookups", lookups), zap.Int64("hits", hits),
			zap.Float64("hit_rate", float64(hits)/float64(max(lookups, 1))))
	}
	if err != nil {
		return fmt.Errorf("frontier: close: %w", err)
	}
	return nil
}
