package browser

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/handlers/internal/wake"
)

// ErrClosed is returned by Render once the pool is closed.
var ErrClosed = errors.New("browser: pool closed")

// ErrBrowserLost is returned by Render when the browser rendering the page died (it
// crashed, was killed, or lost its connection) before the page was done: the page
// must be fetched again.
var ErrBrowserLost = errors.New("browser: the browser died while rendering the page")

// Pool is a managed set of browsers for one fetch process: at most Browsers browsers
// of at most Tabs pages each. A browser is started when a page needs one (within
// LaunchTimeout), replaced after RetireAfter pages or above MaxMemory (it finishes
// the pages it has and closes before its replacement starts, so that memory stays
// within Browsers browsers), replaced when it crashes, and closed after IdleTimeout
// without pages; its processes are reaped. A Pool is safe for concurrent use.
type Pool struct {
	cfg  Config
	log  *zap.Logger
	ctx  context.Context // the pool's lifetime: browsers are children of it
	stop context.CancelFunc
	// watching ends with unwatch (Close), before the browsers close.
	watchCtx context.Context
	unwatch  context.CancelFunc
	fixed    *pageProxy // the browsers' --proxy-server, for what no page asked for

	mu        sync.Mutex
	browsers  []*instance // in service and retiring
	launching int
	shutting  int         // browsers closing, not yet gone
	changed   wake.Signal // broadcast when a tab frees or a browser goes
	closed    bool
	nextID    int
	watching  bool
	wg        sync.WaitGroup // the watcher and browsers closing

	launches, launchFailures, crashes, pages       atomic.Int64
	retiredPages, retiredMemory, retiredIdle, lost atomic.Int64
	killedMemory                                   atomic.Int64
}

// Stats are a pool's figures since New.
type Stats struct {
	// Live is the number of browsers running (retiring and closing ones included).
	Live int
	// Memory is the proportional set size of the live browsers' processes, in bytes,
	// as last measured.
	Memory int64
	// Launches counts browsers started; LaunchFailures the starts that failed or
	// timed out.
	Launches, LaunchFailures int64
	// Pages counts pages rendered (whatever their outcome); PagesLost those a dying
	// browser took with it.
	Pages, PagesLost int64
	// Crashes counts browsers that died without being asked to.
	Crashes int64
	// RetiredPages, RetiredMemory and RetiredIdle count browsers replaced after
	// RetireAfter pages, above MaxMemory, and closed after IdleTimeout.
	RetiredPages, RetiredMemory, RetiredIdle int64
	// KilledMemory counts browsers killed while rendering, above MaxMemory +
	// MemoryAllowance (their pages were lost).
	KilledMemory int64
}

// New returns a pool of cfg. No browser starts before the first page needs one. ctx
// is the pool's lifetime: its cancellation kills every browser at once (Close is the
// orderly end).
func New(ctx context.Context, cfg Config) (*Pool, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.URL == "" && cfg.ExecPath == "" {
		p, err := FindChromium()
		if err != nil {
			return nil, err
		}
		cfg.ExecPath = p
	}
	fixed, err := newPageProxy(cfg.ProxyListen, cfg.Dial)
	if err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(ctx)
	wctx, unwatch := context.WithCancel(ctx)
	openPools.Add(1)
	return &Pool{cfg: cfg, log: cfg.Logger, ctx: ctx, stop: stop, watchCtx: wctx, unwatch: unwatch, fixed: fixed}, nil
}

// Stats returns the pool's figures.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	s := Stats{Live: len(p.browsers) + p.shutting}
	for _, b := range p.browsers {
		s.Memory += b.memory.Load()
	}
	p.mu.Unlock()
	s.Launches, s.LaunchFailures = p.launches.Load(), p.launchFailures.Load()
	s.Pages, s.PagesLost, s.Crashes = p.pages.Load(), p.lost.Load(), p.crashes.Load()
	s.RetiredPages, s.RetiredMemory, s.RetiredIdle = p.retiredPages.Load(), p.retiredMemory.Load(), p.retiredIdle.Load()
	s.KilledMemory = p.killedMemory.Load()
	return s
}

// notify wakes the goroutines waiting for a tab. Called with p.mu held.
func (p *Pool) notify() { p.changed.Broadcast() }

// acquire returns a browser with a free tab, starting one when the pool may; it
// waits while every tab is busy.
func (p *Pool) acquire(ctx context.Context) (*instance, error) {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, ErrClosed
		}
		var best *instance
		for _, b := range p.browsers {
			// A browser whose context has ended is dead: the watcher takes it out
			// (died) and wakes us, but a page that saw the death may ask again first.
			dead := b.ctx.Err() != nil
			if !dead && b.retiring == "" && b.inUse < p.cfg.Tabs && (best == nil || b.inUse < best.inUse) {
				best = b
			}
		}
		if best != nil {
			best.inUse++
			best.lastUsed = time.Now()
			p.mu.Unlock()
			return best, nil
		}
		// A retiring browser finishing its pages, and one closing, still count: memory
		// stays within Browsers browsers (a retirement costs its pages a wait, not a
		// second browser's memory).
		if len(p.browsers)+p.shutting+p.launching < p.cfg.Browsers {
			p.launching++
			p.mu.Unlock()
			b, err := p.launch()
			p.mu.Lock()
			p.launching--
			p.notify()
			if err == nil && p.closed {
				err = ErrClosed
				p.shutting++
				p.wg.Add(1)
				go p.shut(b)
			}
			if err != nil {
				p.mu.Unlock()
				return nil, err
			}
			b.inUse++
			b.lastUsed = time.Now()
			p.browsers = append(p.browsers, b)
			p.watch()
			p.mu.Unlock()
			return b, nil
		}
		if err := p.changed.Wait(ctx, &p.mu); err != nil {
			return nil, err
		}
	}
}

// release gives back b's tab after a page. A browser past RetireAfter pages retires:
// it takes no new page, and closes once its last one is done.
func (p *Pool) release(b *instance) {
	p.pages.Add(1)
	p.mu.Lock()
	defer p.mu.Unlock()
	b.inUse--
	b.pages++
	b.lastUsed = time.Now()
	if b.pages >= p.cfg.RetireAfter {
		p.retire(b, "pages")
	}
	p.closeIfDrained(b)
	p.notify()
}

// retire takes b out of service for reason ("pages", "memory", "idle"), counted once.
// Called with p.mu held.
func (p *Pool) retire(b *instance, reason string) {
	if b.retiring != "" {
		return
	}
	b.retiring = reason
	switch reason {
	case "pages":
		p.retiredPages.Add(1)
	case "memory":
		p.retiredMemory.Add(1)
	case "idle":
		p.retiredIdle.Add(1)
	}
	p.cfg.OnEvent("browser_retired_" + reason)
	p.log.Info("browser retired", zap.Int("browser", b.id), zap.String("reason", reason), zap.Int("pages", b.pages),
		zap.Int64("memory_bytes", b.memory.Load()))
}

// closeIfDrained closes a retiring browser with no page left. Called with p.mu held.
func (p *Pool) closeIfDrained(b *instance) {
	if b.retiring == "" || b.inUse > 0 || b.closing {
		return
	}
	b.closing = true
	p.remove(b)
	p.shutting++
	p.wg.Add(1)
	go p.shut(b)
}

// remove takes b out of the list. Called with p.mu held.
func (p *Pool) remove(b *instance) {
	for i, x := range p.browsers {
		if x == b {
			p.browsers = append(p.browsers[:i], p.browsers[i+1:]...)
			return
		}
	}
}

// shut closes b and reaps what it leaves behind.
func (p *Pool) shut(b *instance) {
	defer p.wg.Done()
	b.close()
	reapOrphans()
	p.mu.Lock()
	p.shutting--
	p.notify()
	p.mu.Unlock()
}

// died handles a browser whose context ended without the pool asking: a crash.
func (p *Pool) died(b *instance) {
	p.mu.Lock()
	if b.closing || p.closed {
		p.mu.Unlock()
		return
	}
	b.closing = true
	p.remove(b)
	p.shutting++
	p.notify()
	pages, killed := b.pages, b.killed
	p.mu.Unlock()
	if killed == nil {
		p.crashes.Add(1)
		p.cfg.OnEvent("browser_crashes")
		p.log.Warn("browser died; its pages are fetched again", zap.Int("browser", b.id), zap.Int("pid", b.pid),
			zap.Int("pages", pages), zap.Error(b.exitErr()))
	}
	p.wg.Add(1)
	go p.shut(b)
}

// watch starts the watcher if it is not running. Called with p.mu held.
func (p *Pool) watch() {
	if p.watching {
		return
	}
	p.watching = true
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(p.cfg.PageSampleInterval)
		defer t.Stop()
		last := time.Now()
		for {
			select {
			case <-p.watchCtx.Done():
				return
			case now := <-t.C:
				if now.Sub(last) >= p.cfg.SampleInterval {
					last = now
					p.sample()
				} else {
					p.sampleBusy()
				}
			}
		}
	}()
}

// sampleBusy measures the browsers rendering pages, between two samples, and kills
// those above their ceiling (see overCeiling): a page's script can build a DOM of
// gigabytes within a second, and retirement waits for the page.
func (p *Pool) sampleBusy() {
	p.mu.Lock()
	var bs []*instance
	for _, b := range p.browsers {
		if b.inUse > 0 && b.pid > 0 && !b.closing {
			bs = append(bs, b)
		}
	}
	p.mu.Unlock()
	if len(bs) == 0 {
		return
	}
	for _, b := range bs {
		b.memory.Store(treeMemory(b.pid))
	}
	p.mu.Lock()
	for _, b := range bs {
		p.overCeiling(b)
	}
	p.mu.Unlock()
}

// overCeiling kills b, rendering pages above MaxMemory + MemoryAllowance: its pages
// fail (ErrBrowserLost, with why) and are fetched again, and the pool starts another
// browser for the next ones. It reports whether it did. Called with p.mu held.
func (p *Pool) overCeiling(b *instance) bool {
	mem := b.memory.Load()
	if b.closing || b.killed != nil || b.inUse == 0 || b.pid <= 0 || mem <= p.cfg.MaxMemory+p.cfg.MemoryAllowance {
		return false
	}
	b.killed = fmt.Errorf("browser: killed while rendering at %d MiB of memory (PSS), above its ceiling of %d MiB + an allowance of %d MiB",
		mem>>20, p.cfg.MaxMemory>>20, p.cfg.MemoryAllowance>>20)
	b.retiring = "memory" // it takes no new page meanwhile (counted as a kill, not a retirement)
	p.killedMemory.Add(1)
	p.cfg.OnEvent("browser_killed_memory")
	p.log.Warn("browser killed above its memory ceiling; its pages are fetched again", zap.Int("browser", b.id), zap.Int("pid", b.pid),
		zap.Int("pages_lost", b.inUse), zap.Int64("memory_bytes", mem), zap.Int64("max_memory_bytes", p.cfg.MaxMemory),
		zap.Int64("allowance_bytes", p.cfg.MemoryAllowance))
	killTree(b.pid)
	return true
}

// lostFor is why b was lost: its kill's reason when the pool killed it, else err.
func (p *Pool) lostFor(b *instance, err error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if b.killed != nil {
		return b.killed
	}
	return err
}

// sample measures each browser's memory, retires those above MaxMemory, closes idle
// ones and reaps orphans.
func (p *Pool) sample() {
	p.mu.Lock()
	bs := append([]*instance(nil), p.browsers...)
	p.mu.Unlock()
	for _, b := range bs {
		if b.pid > 0 {
			b.memory.Store(treeMemory(b.pid))
		}
	}
	p.mu.Lock()
	for _, b := range bs {
		switch {
		case b.closing:
		case p.overCeiling(b):
		case b.pid > 0 && b.memory.Load() > p.cfg.MaxMemory:
			p.retire(b, "memory")
		case b.inUse == 0 && time.Since(b.lastUsed) > p.cfg.IdleTimeout:
			p.retire(b, "idle")
		}
		p.closeIfDrained(b)
	}
	p.mu.Unlock()
	reapOrphans()
}

// Close stops taking pages, closes every browser (gracefully, then by force within
// ctx) and reaps their processes. Pages being rendered fail with ErrClosed.
func (p *Pool) Close(ctx context.Context) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	bs := p.browsers
	p.browsers = nil
	for _, b := range bs {
		if !b.closing {
			b.closing = true
			p.shutting++
			p.wg.Add(1)
			go p.shut(b)
		}
	}
	p.notify()
	p.mu.Unlock()
	p.unwatch()
	done := make(chan struct{})
	go func() {
		p.wg.Wait()
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	p.stop() // kills what did not close in time
	<-done
	p.fixed.close()
	reapOrphans()
	if openPools.Add(-1) == 0 {
		// The last pool: what its browsers left (crash handlers exit a moment after
		// their browser) is reaped as it exits, not left as zombies until a next pool.
		settleOrphans(orphanSettle)
	}
	return err
}

// openPools counts the pools not closed yet, in this process.
var openPools atomic.Int32

// orphanSettle bounds how long the last pool's Close waits for its browsers' crash
// handlers to exit, to reap them.
const orphanSettle = 2 * time.Second
