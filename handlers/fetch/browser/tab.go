package browser

import (
	"context"
	"fmt"
	"iter"
	"net"
	"sync/atomic"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// tab is one tab of a browser, in a browser context of its own whose proxy is the
// tab's page proxy. A tab renders one page, then it is closed and its browser context
// disposed of, with every window the page opened: a page's popup kept its opener and
// navigated the next page of a reused tab (the victim was stored as the attacker's
// page), and a page left in a tab kept its timers running. The cost is a tab opened per
// page (150-350 ms); it is opened ahead, while the slot's last page is done with
// (recycle), and the HTTP cache goes with each page's context.
type tab struct {
	b      *instance
	ctx    context.Context // the target's: ends with the browser, or when the tab is closed
	cancel context.CancelFunc
	proxy  *pageProxy
	bc     cdp.BrowserContextID
	main   cdp.FrameID
	net    *netTracker
	run    atomic.Pointer[pageRun] // the page rendering now; nil before and after it

	ua      string // the user agent set, "" the browser's own
	headers bool   // extra headers are set
}

// takeTab returns a tab of b opened ahead for a page, or opens one; either way it
// starts opening the next page's tab ahead (spare), while this page renders.
func (p *Pool) takeTab(b *instance) (*tab, error) {
	p.mu.Lock()
	var t *tab
	if n := len(b.idle); n > 0 {
		t = b.idle[n-1]
		b.idle = b.idle[:n-1]
	}
	p.mu.Unlock()
	go p.spare(b)
	if t != nil && t.ctx.Err() == nil {
		return t, nil
	}
	if t != nil {
		t.close()
	}
	return p.openTab(b)
}

// recycle closes t once its page is done, then gives the slot back: the slot stays
// taken until t is gone, so that nothing of the page is alive beside the pages that
// follow it in the browser.
func (p *Pool) recycle(b *instance, t *tab) {
	t.close()
	p.release(b)
}

// spare opens a tab ahead for a page to come, unless b has its spares (or is closing):
// a page takes an open tab rather than waiting 150-350 ms (400-1,300 ms at a load of
// 15) for one.
func (p *Pool) spare(b *instance) {
	p.mu.Lock()
	open := !p.closed && !b.closing && b.retiring == "" && b.ctx.Err() == nil && len(b.idle)+b.opening < spares(p.cfg.Tabs)
	if open {
		b.opening++
		p.recycling.Add(1)
	}
	p.mu.Unlock()
	if !open {
		return
	}
	defer p.recycling.Done()
	nt, err := p.openTab(b)
	p.mu.Lock()
	b.opening--
	keep := err == nil && !p.closed && !b.closing && b.retiring == ""
	if keep {
		b.idle = append(b.idle, nt)
	}
	p.mu.Unlock()
	if err == nil && !keep {
		nt.close()
	}
}

// spares is how many tabs a browser of tabs slots keeps open ahead: half its slots,
// at least one (each is a renderer process of an empty page, 20-40 MB).
func spares(tabs int) int { return (tabs + 1) / 2 }

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
	t := &tab{b: b, ctx: tctx, cancel: cancel, proxy: px, net: newNetTracker()}
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
		go t.closePopups(chromedp.BrowserEvents(tctx, target.TargetCreated))
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

// closePopups closes every window the tab's page opens (window.open, target=_blank, a
// form's target) as soon as the browser reports it: a crawler takes the page, never a
// popup, and a popup holding its opener can navigate the page. Frames of other sites
// (targets of type "iframe") are the page's own and stay.
func (t *tab) closePopups(events iter.Seq2[target.EventTargetCreated, error]) {
	for ev, err := range events {
		if err != nil {
			return
		}
		if info := ev.TargetInfo; info != nil && info.BrowserContextID == t.bc && info.Type == "page" && cdp.FrameID(info.TargetID) != t.main {
			if r := t.run.Load(); r != nil {
				r.popups.Add(1)
			}
			go t.closeTarget(info.TargetID)
		}
	}
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
