package browser

import (
	"context"
	"fmt"
	"iter"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/storage"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// tab is one tab of a browser, in a browser context of its own whose proxy is the
// tab's page proxy. Pages take turns in it (a tab is opened once: opening one costs
// 150-350 ms, 400-1,300 ms at a load of 15, more than rendering a simple page); between
// two pages it is cleared and its proxy refuses every connection. A window a page opens
// is closed as soon as it is seen, and the tab is not trusted with another page: a
// popup that kept its opener navigated the next pages of a reused tab, which were
// stored as the attacker's page. A page that opened none leaves only its document,
// which the next page's replaces (see pageRun.paused for what it may do meanwhile).
type tab struct {
	b       *instance
	ctx     context.Context // the target's: ends with the browser, or when the tab is closed
	cancel  context.CancelFunc
	proxy   *pageProxy
	bc      cdp.BrowserContextID
	main    cdp.FrameID
	net     *netTracker
	run     atomic.Pointer[pageRun] // the page rendering now; nil between pages
	opened  atomic.Bool             // a window was opened in the tab's context: not reused
	flooded atomic.Bool             // its page's requests went past what the proxy let through: not reused
	mu      sync.Mutex
	popups  map[target.ID]bool // windows opened in the tab's context, not yet gone
	ua      string             // the user agent set, "" the browser's own
	headers bool               // extra headers are set
}

// takeTab returns an idle tab of b, or opens one. A tab in which a window was opened
// since its last page (by that page's document, still there) is closed instead.
func (p *Pool) takeTab(b *instance) (*tab, error) {
	for {
		p.mu.Lock()
		n := len(b.idle)
		if n == 0 {
			p.mu.Unlock()
			return p.openTab(b)
		}
		t := b.idle[n-1]
		b.idle = b.idle[:n-1]
		p.mu.Unlock()
		if t.reusable() {
			return t, nil
		}
		t.close()
	}
}

// putTab gives t back to b after a page; a tab whose page failed, or in which a window
// was opened, is closed rather than trusted with the next one.
func (p *Pool) putTab(b *instance, t *tab, ok bool) {
	p.mu.Lock()
	if ok && !b.closing && t.reusable() {
		b.idle = append(b.idle, t)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	t.close()
}

// reusable tells whether t may take another page: its browser is up, and its last page
// opened no window and sent no requests past the page's cap. Such a page's document
// stays in the tab until the next page's replaces it, and what it still sends in that
// moment would pass as the next page's (its requests counted against that page's cap).
func (t *tab) reusable() bool {
	return t.ctx.Err() == nil && !t.opened.Load() && !t.flooded.Load()
}

// openTab opens a tab in b within LaunchTimeout.
func (p *Pool) openTab(b *instance) (*tab, error) {
	px, err := newPageProxy(p.cfg.ProxyListen, nil)
	if err != nil {
		return nil, fmt.Errorf("browser: page proxy: %w", err)
	}
	_, port, _ := net.SplitHostPort(px.addr())
	proxy := "http://" + net.JoinHostPort(p.cfg.ProxyHost, port)
	tctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext(func(c *target.CreateBrowserContextParams) {
		c.ProxyServer, c.ProxyBypassList = proxy, "<-loopback>"
	}))
	t := &tab{b: b, ctx: tctx, cancel: cancel, proxy: px, net: newNetTracker(), popups: map[target.ID]bool{}}
	opened := make(chan error, 1)
	go func() { opened <- chromedp.Listen(tctx, t.net.on) }() // opens the target, bound to tctx
	timer := time.NewTimer(p.cfg.LaunchTimeout)
	defer timer.Stop()
	select {
	case err = <-opened:
	case <-timer.C:
		cancel()
		<-opened
		err = fmt.Errorf("no tab within %s", p.cfg.LaunchTimeout)
	}
	if err == nil {
		c := chromedp.FromContext(tctx)
		t.bc, t.main = c.BrowserContextID, cdp.FrameID(c.Target.TargetID)
		t.net.setMain(t.main)
		go t.intercept(chromedp.Events(tctx, fetch.RequestPaused))
		go t.dismissDialogs(chromedp.Events(tctx, page.JavascriptDialogOpening))
		err = chromedp.ListenBrowser(tctx, t.onTarget)
		_, err = chromedp.CallBrowser(tctx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
			Behavior: cdpbrowser.SetDownloadBehaviorBehaviorDeny, BrowserContextID: t.bc})
	}
	if err != nil {
		t.close()
		return nil, fmt.Errorf("browser: open a tab: %w", err)
	}
	return t, nil
}

// close closes the tab's proxy, then the tab (its browser context goes with it). In
// that order: closing the tab detaches from it first, and the browser sends on the
// requests it had paused for the page (a page given up on keeps asking), through the
// proxy if it is still open: images a page blocks reached the site that way.
func (t *tab) close() {
	t.proxy.close()
	t.cancel()
}

// intercept hands the tab's paused requests to the page rendering now; between pages
// they go on (the proxy refuses their connections anyway).
func (t *tab) intercept(events iter.Seq2[fetch.EventRequestPaused, error]) {
	for ev, err := range events {
		if err != nil {
			return
		}
		if r := t.run.Load(); r != nil {
			r.paused(ev)
		} else {
			t.fail(ev.RequestID)
		}
	}
}

// dismissDialogs closes alert, confirm and prompt dialogs, which would stop the page.
func (t *tab) dismissDialogs(events iter.Seq2[page.EventJavascriptDialogOpening, error]) {
	for _, err := range events {
		if err != nil {
			return
		}
		chromedp.Call(t.ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false}) //nolint:errcheck // a closed tab drops it
	}
}

func (t *tab) cont(id fetch.RequestID) {
	chromedp.Call(t.ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: id}) //nolint:errcheck // a closed tab drops it
}

func (t *tab) fail(id fetch.RequestID) {
	chromedp.Call(t.ctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: id, ErrorReason: network.ErrorReasonBlockedByClient}) //nolint:errcheck // a closed tab drops it
}

// clear readies the tab for the next page: it drops the cookies of the tab's context
// and the storage of the page's origin. The page stays until the next one replaces it
// (leaving it for about:blank took 80-480 ms a page, and a fire-and-forget one raced
// the next page's load); meanwhile the tab's proxy refuses its connections.
func (t *tab) clear(ctx context.Context, pageURL string) error {
	if _, err := chromedp.CallBrowser(ctx, storage.ClearCookies, storage.ClearCookiesParams{BrowserContextID: t.bc}); err != nil {
		return err
	}
	u, err := url.Parse(pageURL)
	if err != nil || u.Host == "" {
		return nil
	}
	_, err = chromedp.Call(ctx, storage.ClearDataForOrigin, storage.ClearDataForOriginParams{Origin: u.Scheme + "://" + u.Host,
		StorageTypes: "local_storage,session_storage,indexeddb,websql,service_workers,cache_storage,shader_cache"})
	return err
}

// onTarget closes every window the tab's page opens (window.open, target=_blank, a
// form's target) as soon as the browser reports it: a crawler takes the page, never a
// popup, and a popup holding its opener can navigate the page. Frames of other sites
// (targets of type "iframe") are the page's own and stay. It runs in the loop that
// reads the browser's messages, before the next one is read: a window is counted open
// before any request it makes reaches the page's interception (see pageRun.paused).
func (t *tab) onTarget(ev any) {
	switch ev := ev.(type) {
	case *target.EventTargetCreated:
		info := ev.TargetInfo
		if info == nil || info.BrowserContextID != t.bc || info.Type != "page" || cdp.FrameID(info.TargetID) == t.main {
			return
		}
		t.opened.Store(true)
		t.mu.Lock()
		t.popups[info.TargetID] = true
		t.mu.Unlock()
		if r := t.run.Load(); r != nil {
			r.popups.Add(1)
		}
		go t.closeTarget(info.TargetID)
	case *target.EventTargetDestroyed:
		t.mu.Lock()
		delete(t.popups, ev.TargetID)
		t.mu.Unlock()
	}
}

// popupOpen reports whether a window the page opened is still open.
func (t *tab) popupOpen() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.popups) > 0
}

func (t *tab) closeTarget(id target.ID) {
	chromedp.CallBrowser(t.ctx, target.CloseTarget, target.CloseTargetParams{TargetID: id}) //nolint:errcheck // a closed tab drops it
}

// closeOthers closes every window of the tab's browser context but the tab, before
// the page's DOM is taken: a popup the events have not reported yet goes too. It
// returns how many it closed.
func (t *tab) closeOthers(ctx context.Context) (int, error) {
	res, err := chromedp.CallBrowser(ctx, target.GetTargets, target.GetTargetsParams{Filter: target.Filter{{Type: "page"}}})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, info := range res.TargetInfos {
		if info.BrowserContextID == t.bc && cdp.FrameID(info.TargetID) != t.main {
			if _, err := chromedp.CallBrowser(ctx, target.CloseTarget, target.CloseTargetParams{TargetID: info.TargetID}); err == nil {
				n++
			}
		}
	}
	return n, nil
}
