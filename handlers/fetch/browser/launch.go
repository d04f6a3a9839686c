package browser

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sync/atomic"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"
	"go.uber.org/zap"
)

// instance is one browser of a pool.
type instance struct {
	id      int
	ctx     context.Context // the browser's chromedp context: done when it is gone
	cancel  context.CancelFunc
	release context.CancelFunc // the allocator's: ends the process and waits for it
	pid     int                // 0 for a remote browser
	product string
	memory  atomic.Int64

	// Under the pool's mu.
	idle         []*tab // open tabs no page uses
	inUse, pages int
	lastUsed     time.Time
	retiring     string // why it takes no new page; "" in service
	closing      bool
}

// launch starts a browser (or connects to the remote one) within LaunchTimeout.
func (p *Pool) launch() (*instance, error) {
	p.mu.Lock()
	p.nextID++
	id := p.nextID
	p.mu.Unlock()
	var actx context.Context
	var release context.CancelFunc
	if p.cfg.URL != "" {
		actx, release = remote.NewAllocator(p.ctx, p.cfg.URL)
	} else {
		becomeSubreaper()
		actx, release = chromedp.NewExecAllocator(p.ctx, p.execOptions()...)
	}
	bctx, cancel := chromedp.NewContext(actx)
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(bctx) }() // the first run starts it, bound to bctx
	timer := time.NewTimer(p.cfg.LaunchTimeout)
	defer timer.Stop()
	var err error
	select {
	case err = <-started:
	case <-timer.C:
		err = fmt.Errorf("no answer within %s", p.cfg.LaunchTimeout)
		cancel()
		<-started
	}
	var version cdpbrowser.GetVersionResult
	if err == nil {
		version, err = chromedp.CallBrowser(bctx, cdpbrowser.GetVersion, cdp.Empty{})
	}
	if err != nil {
		cancel()
		release()
		p.launchFailures.Add(1)
		p.cfg.OnEvent("browser_launch_failures")
		return nil, fmt.Errorf("browser: start %s: %w", p.where(), err)
	}
	b := &instance{id: id, ctx: bctx, cancel: cancel, release: release, product: version.Product, lastUsed: time.Now()}
	if proc := chromedp.FromContext(bctx).Browser.Process(); proc != nil {
		b.pid = proc.Pid
		addMain(b.pid)
	}
	p.launches.Add(1)
	p.cfg.OnEvent("browser_launches")
	p.log.Info("browser started", zap.Int("browser", id), zap.Int("pid", b.pid), zap.String("product", b.product))
	go func() {
		<-bctx.Done()
		p.died(b)
	}()
	return b, nil
}

// where names the browser for messages.
func (p *Pool) where() string {
	if p.cfg.URL != "" {
		return p.cfg.URL
	}
	return p.cfg.ExecPath
}

// execOptions are the command line of a started browser: headless, no sandbox when
// root (chromedp adds it), no GPU, QUIC, first-run, background networking, component
// updates, sync, crash reporter, back-forward cache or omnibox popups; every request
// through the pool's proxy (loopback included); a new empty user-data-dir, removed
// when the browser is gone.
func (p *Pool) execOptions() []chromedp.ExecAllocatorOption {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(p.cfg.ExecPath),
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-crash-reporter", true),
		chromedp.Flag("no-pings", true),
		chromedp.Flag("webrtc-ip-handling-policy", "disable_non_proxied_udp"),
		chromedp.Flag("force-webrtc-ip-handling-policy", true),
		// No back-forward cache (it kept every page left for about:blank alive in its
		// renderer), and none of the omnibox popups a window preloads (a renderer each,
		// one window per tab): 739 -> 436 MiB PSS for 4 tabs after 12 pages.
		chromedp.Flag("disable-features", "Translate,BlinkGenPropertyTrees,BackForwardCache,PreloadTopChromeWebUI,WebUIOmniboxPopup,WebUIOmniboxAimPopup"),
		chromedp.Flag("proxy-server", "http://"+p.fixed.addr()),
		chromedp.Flag("proxy-bypass-list", "<-loopback>"),
	)
	for _, f := range p.cfg.Flags {
		name, value, ok := cutFlag(f)
		if ok {
			opts = append(opts, chromedp.Flag(name, value))
		} else {
			opts = append(opts, chromedp.Flag(name, true))
		}
	}
	return opts
}

// cutFlag splits "--name=value".
func cutFlag(f string) (string, string, bool) {
	for len(f) > 0 && f[0] == '-' {
		f = f[1:]
	}
	for i := 0; i < len(f); i++ {
		if f[i] == '=' {
			return f[:i], f[i+1:], true
		}
	}
	return f, "", false
}

// close closes the browser: gracefully within closeTimeout, then by killing it; its
// processes are waited for (their orphans are reaped by the pool).
func (b *instance) close() {
	for _, t := range b.idle {
		t.proxy.close()
	}
	ctx, cancel := context.WithTimeout(b.ctx, closeTimeout)
	chromedp.Cancel(ctx) //nolint:errcheck // a dead browser has nothing to close
	cancel()
	b.cancel()
	b.release()
	removeMain(b.pid)
}

// exitErr is how the browser's process ended, when it did.
func (b *instance) exitErr() error {
	err := context.Cause(b.ctx)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee
	}
	return err
}
