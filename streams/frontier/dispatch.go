package frontier

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/streamcrawl/streamcrawl/streams/loop"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// Defaults of the Dispatcher.
const (
	DefaultDispatchWindow   = 128
	DefaultDispatchInterval = 20 * time.Millisecond
	// DefaultDispatchIdleInterval is the longest wait between rounds while every
	// frontier is empty.
	DefaultDispatchIdleInterval = 100 * time.Millisecond
)

// maxHandOut is the most requests one dispatch call moves (about 30 µs of Redis time
// each with their hosts' bookkeeping), so that no call holds Redis up for long.
const maxHandOut = 256

// DispatcherConfig configures a Dispatcher.
type DispatcherConfig struct {
	Client redis.UniversalClient
	// Layout of the crawl: every partition's frontier is dispatched to its own stream.
	// When it is zero, Keys (a crawl of one partition).
	Layout Layout
	Keys   Keys
	// Window is the most requests left unread in the requests stream: the frontier
	// keeps the rest, in order, so a high-priority request seeded mid-crawl waits behind
	// at most Window others. Default DefaultDispatchWindow.
	Window int
	// Interval between dispatch rounds. Default DefaultDispatchInterval.
	Interval time.Duration
	// IdleInterval is the longest wait between rounds while every frontier is empty (no
	// host ready or scheduled, no lease held): the wait doubles from Interval up to it
	// after each round that finds them empty, and falls back to Interval once one holds
	// something. Requests queued into an idle frontier are handed out by the emit that
	// queued them. Default DefaultDispatchIdleInterval.
	IdleInterval time.Duration
	// CountUnread counts unread entries with XRANGE instead of trusting XINFO's lag
	// (needed where lag is unreliable, as in the embedded Redis).
	CountUnread bool
	// Hosts is the crawl's default per-host politeness. Its zero value: no limits.
	Hosts HostDefaults
	// Logger; nil means no-op.
	Logger *zap.Logger
}

// Dispatcher hands requests of the hosts that may start one now to the requests stream
// (see hostSchedLua), best band first, keeping the stream's unread backlog at most
// Window; it also makes hosts whose time came ready and takes back the slots of dead
// fetchers. Each round is one Lua script per partition, so a crash inside it cannot
// lose or duplicate a request. Every fetch process runs one; any number may run at once.
type Dispatcher struct {
	cfg DispatcherConfig
	log *zap.Logger
	mu  sync.Mutex
	hot []bool // per partition: the last round moved requests there
	// beforeRun, set only by tests (export_test.go), is called before each dispatch
	// script with the window; an error stands for a process killed there.
	beforeRun func(window int) error
}

// NewDispatcher returns a Dispatcher.
func NewDispatcher(cfg DispatcherConfig) (*Dispatcher, error) {
	if cfg.Client == nil {
		return nil, errors.New("frontier: dispatcher needs a redis client")
	}
	if cfg.Layout.N() == 0 {
		cfg.Layout = NewLayout(cfg.Keys.Crawl(), 1)
	}
	cfg.Window = cmp.Or(cfg.Window, DefaultDispatchWindow)
	cfg.Hosts.setDefaults()
	cfg.Interval = cmp.Or(cfg.Interval, DefaultDispatchInterval)
	cfg.IdleInterval = cmp.Or(cfg.IdleInterval, max(DefaultDispatchIdleInterval, cfg.Interval))
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	return &Dispatcher{cfg: cfg, log: cfg.Logger, hot: make([]bool, cfg.Layout.N())}, nil
}

// dispatchScript runs one dispatch round in a partition: takes back the slots of dead
// fetchers' leases, makes the hosts whose time has come ready, and hands out requests of
// ready hosts until the requests stream has window unread entries (see hostSchedLua).
// Every step is bounded (at most 1,000 leases and hosts looked at, maxHandOut requests
// moved), so one call never holds Redis up for long.
//
// KEYS[1..8], ARGV[1..8] -> schedKeys, schedArgs (see hostSchedLua)
// ARGV[9] -> most requests to move (maxHandOut)
// Output: number of requests moved
var dispatchScript = schedScript("", `
local now = now_ms()
expire_leases(now, 1000)
promote(now, 1000)
if redis.call('ZCARD', S.ready) == 0 then return 0 end
local r = room(tonumber(ARGV[9]))
if r <= 0 then return 0 end
return hand_out(r, now)
`)

// Dispatch runs one round over every partition and returns how many requests it moved.
// Partitions with nothing to do are skipped after a pipelined look (ZCARD, ZCOUNT):
// most rounds find nothing to move, and a script call costs Redis several times what a
// look does.
func (d *Dispatcher) Dispatch(ctx context.Context) (int, error) {
	n, _, err := d.round(ctx)
	return n, err
}

// round is Dispatch that also reports whether every partition's frontier was empty:
// no host ready, scheduled or holding a lease. A partition where the last round moved
// requests is dispatched again without a look first (a busy frontier, as in a broad
// crawl, has something due nearly every round: the look would be one more round trip
// for Redis to wake up to); the others are looked at first.
func (d *Dispatcher) round(ctx context.Context) (moved int, idle bool, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	total := 0
	var firstErr error
	var looks []partLook
	for _, h := range d.hot {
		if !h {
			looks = d.look(ctx)
			break
		}
	}
	idle = looks != nil
	for part := range d.hot {
		if looks != nil {
			idle = idle && looks[part].empty
			if !looks[part].due && !d.hot[part] {
				continue
			}
		}
		n, err := d.dispatchPart(ctx, part)
		d.hot[part] = n > 0
		total += n
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return total, idle, firstErr
}

// partLook is what a look at a partition's frontier found.
type partLook struct {
	due   bool // a host is ready, a host's time comes within the interval, or a lease expires
	empty bool // no host is ready or scheduled, and no lease is held
}

// look looks at every partition's frontier in one pipeline. The answer is only a hint
// (the script decides, on the Redis clock; the look uses the local one, an interval
// ahead to allow for skew); a failed look counts as "due".
func (d *Dispatcher) look(ctx context.Context) []partLook {
	soon := strconv.FormatInt(time.Now().Add(d.cfg.Interval).UnixMilli(), 10)
	parts := d.cfg.Layout.Parts()
	cmds := make([][5]*redis.IntCmd, len(parts))
	_, _ = d.cfg.Client.Pipelined(ctx, func(p redis.Pipeliner) error { // errors are read per command
		for i, k := range parts {
			cmds[i] = [5]*redis.IntCmd{p.ZCard(ctx, k.Ready()), p.ZCount(ctx, k.Sched(), "-inf", soon),
				p.ZCount(ctx, k.Leases(), "-inf", soon), p.ZCard(ctx, k.Sched()), p.ZCard(ctx, k.Leases())}
		}
		return nil
	})
	out := make([]partLook, len(parts))
	for i, cs := range cmds {
		out[i].empty = true
		for j, c := range cs {
			some := c.Err() != nil || c.Val() > 0
			if j < 3 {
				out[i].due = out[i].due || some
			}
			out[i].empty = out[i].empty && !some
		}
	}
	return out
}

// dispatchPart runs one round in partition part.
func (d *Dispatcher) dispatchPart(ctx context.Context, part int) (int, error) {
	if d.beforeRun != nil { // set by tests only (export_test.go)
		if err := d.beforeRun(d.cfg.Window); err != nil {
			return 0, fmt.Errorf("frontier: dispatch: %w", err)
		}
	}
	k := d.cfg.Layout.Part(part)
	keys := schedKeys(k)
	args := schedArgs(d.cfg.Hosts, partIDPrefix(part), d.cfg.Window, d.cfg.CountUnread, maxHandOut)
	total := 0
	for range 64 { // a window larger than maxHandOut fills in several calls
		n, err := dispatchScript.Run(ctx, d.cfg.Client, keys, args...).Int()
		if err != nil {
			return total, fmt.Errorf("frontier: dispatch: %w", err)
		}
		total += n
		if n < maxHandOut {
			break
		}
	}
	return total, nil
}

// Run dispatches every Interval until ctx ends, and less often while every frontier is
// empty (see DispatcherConfig.IdleInterval). A host's next request is handed out within
// about an Interval of its time. A failed round is logged and tried again; Run returns
// nil when ctx ends.
func (d *Dispatcher) Run(ctx context.Context) error {
	wait := d.cfg.Interval
	return loop.Paced(ctx, wait, loop.Config{Log: d.log, Msg: "dispatch failed; retrying"}, func(ctx context.Context) (time.Duration, error) {
		_, idle, err := d.round(ctx)
		if idle && err == nil {
			wait = min(2*wait, d.cfg.IdleInterval)
		} else {
			wait = d.cfg.Interval
		}
		return wait, err
	})
}
