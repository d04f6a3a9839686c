package streams

import (
	"context"
	"errors"
	"fmt"
	"time"

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
	// IdleInterval is the longest wait between rounds while every frontier is empty:
	// the wait doubles from Interval up to it after each round that finds them empty,
	// and falls back to Interval once one holds requests. Requests queued into an empty
	// frontier are dispatched by the emit that queued them, so an idle dispatcher only
	// refills a window that was full then. Default DefaultDispatchIdleInterval.
	IdleInterval time.Duration
	// CountUnread counts unread entries with XRANGE instead of trusting XINFO's lag
	// (needed where lag is unreliable, as in the embedded Redis).
	CountUnread bool
	// Logger; nil means no-op.
	Logger *zap.Logger
	// BeforeXAdd is a fault hook for tests: called inside Dispatch with the number of
	// requests about to move; returning an error aborts the script before any change.
	BeforeXAdd func(n int) error
}

// Dispatcher moves requests from the frontier ZSET to the requests stream in frontier
// order, keeping the stream's unread backlog at most Window. The pop and the XADDs are
// one Lua script, so a crash between them cannot lose or duplicate a request. Every fetch
// process runs one; any number may run at once.
type Dispatcher struct {
	cfg DispatcherConfig
	log *zap.Logger
}

// NewDispatcher returns a Dispatcher.
func NewDispatcher(cfg DispatcherConfig) (*Dispatcher, error) {
	if cfg.Client == nil {
		return nil, errors.New("streams: dispatcher needs a redis client")
	}
	if cfg.Layout.N() == 0 {
		cfg.Layout = NewLayout(cfg.Keys.Crawl(), 1)
	}
	setDefault(&cfg.Window, DefaultDispatchWindow)
	setDefault(&cfg.Interval, DefaultDispatchInterval)
	setDefault(&cfg.IdleInterval, max(DefaultDispatchIdleInterval, cfg.Interval))
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	return &Dispatcher{cfg: cfg, log: cfg.Logger}, nil
}

// unreadLua defines unread(): how many entries of a stream a group has not read (at
// most window when counted). The dispatch and emit scripts both keep the requests
// stream's unread backlog within the window with it.
const unreadLua = `
local function unread(stream, group, window, mode)
  local groups = redis.pcall('XINFO', 'GROUPS', stream)
  if groups['err'] then return 0 end -- no stream yet
  for _, g in ipairs(groups) do
    local f = {}
    for j = 1, #g, 2 do f[g[j]] = g[j + 1] end
    if f['name'] == group then
      if mode == 'lag' and f['lag'] then return tonumber(f['lag']) end
      return #redis.call('XRANGE', stream, '(' .. f['last-delivered-id'], '+', 'COUNT', window)
    end
  end
  return redis.call('XLEN', stream)
end
`

// dispatchLua defines dispatch(): move up to window−unread requests from the frontier
// to the requests stream, in frontier order.
const dispatchLua = unreadLua + `
local function dispatch(frontier, stream, seqkey, group, window, mode)
  local n = window - unread(stream, group, window, mode)
  if n <= 0 then return 0 end
  local popped = redis.call('ZRANGE', frontier, 0, n - 1)
  if #popped == 0 then return 0 end
  local seq = redis.call('INCRBY', seqkey, #popped) - #popped
  for i, m in ipairs(popped) do
    redis.call('XADD', stream, '*', '_watermill_message_uuid', 'sc-' .. (seq + i), 'metadata', '', 'payload', m)
  end
  redis.call('ZREMRANGEBYRANK', frontier, 0, #popped - 1)
  return #popped
end
`

// dispatchScript moves up to window−unread requests from the frontier to the stream.
//
// KEYS[1] -> sc:{c}:frontier
// KEYS[2] -> sc:{c}:requests
// KEYS[3] -> sc:{c}:seq
// ARGV[1] -> the fetch group, ARGV[2] -> window, ARGV[3] -> 'lag' or 'range' (how to
// count unread entries), ARGV[4] -> 1 to fail before any change (fault hook)
// Output: number of requests moved
var dispatchScript = redis.NewScript(dispatchLua + `
if ARGV[4] == '1' then return redis.error_reply('fault hook: crashed before XADD') end
return dispatch(KEYS[1], KEYS[2], KEYS[3], ARGV[1], tonumber(ARGV[2]), ARGV[3])
`)

// Dispatch runs one round over every partition and returns how many requests it moved.
// Partitions whose frontier is empty are skipped after one pipelined ZCARD: most rounds
// find nothing to move (an emit dispatches its own requests when the frontier was
// empty), and a script call costs Redis several times what a ZCARD does.
func (d *Dispatcher) Dispatch(ctx context.Context) (int, error) {
	n, _, err := d.round(ctx)
	return n, err
}

// round is Dispatch that also reports whether every frontier was empty.
func (d *Dispatcher) round(ctx context.Context) (moved int, idle bool, err error) {
	total := 0
	var firstErr error
	busy := d.nonEmpty(ctx)
	idle = true
	for part := range d.cfg.Layout.N() {
		if !busy[part] {
			continue
		}
		idle = false
		n, err := d.dispatchPart(ctx, part)
		total += n
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return total, idle, firstErr
}

// nonEmpty reports, per partition, whether its frontier holds requests. The answer is
// only a hint (the script decides what moves); a failed look counts as "holds some".
func (d *Dispatcher) nonEmpty(ctx context.Context) []bool {
	return d.cfg.Layout.holding(ctx, d.cfg.Client, func(p redis.Pipeliner, k Keys) *redis.IntCmd {
		return p.ZCard(ctx, k.Frontier())
	})
}

// dispatchPart runs one round in partition part.
func (d *Dispatcher) dispatchPart(ctx context.Context, part int) (int, error) {
	mode, fault := "lag", "0"
	if d.cfg.CountUnread {
		mode = "range"
	}
	if d.cfg.BeforeXAdd != nil {
		if err := d.cfg.BeforeXAdd(d.cfg.Window); err != nil {
			fault = "1"
		}
	}
	k := d.cfg.Layout.Part(part)
	n, err := dispatchScript.Run(ctx, d.cfg.Client, []string{k.Frontier(), k.Requests(), k.Seq()},
		StageFetch, d.cfg.Window, mode, fault).Int()
	if err != nil {
		return 0, fmt.Errorf("streams: dispatch: %w", err)
	}
	return n, nil
}

// Run dispatches every Interval until ctx ends, and less often while every frontier is
// empty (see DispatcherConfig.IdleInterval).
func (d *Dispatcher) Run(ctx context.Context) {
	errLog := newRateLimited(d.log, 5*time.Second)
	wait := d.cfg.Interval
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		_, idle, err := d.round(ctx)
		if err != nil && ctx.Err() == nil {
			errLog.Warn("dispatch failed; retrying", err)
		}
		if idle && err == nil {
			wait = min(2*wait, d.cfg.IdleInterval)
		} else {
			wait = d.cfg.Interval
		}
		t.Reset(wait)
	}
}
