package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/streamcrawl/streamcrawl/spiders"
)

// maxIdleWait bounds one wait for the network to go idle: a page that keeps a request
// open (long polling, analytics beacons) is taken as it is after that.
const maxIdleWait = 10 * time.Second

// pollEvery is how often a wait looks again.
const pollEvery = 25 * time.Millisecond

// netTracker follows a tab's requests in flight (from the protocol's network events,
// in order) and the main frame's last document response.
type netTracker struct {
	mu       sync.Mutex
	inflight map[network.RequestID]bool
	last     time.Time // of the last request start or end
	main     cdp.FrameID
	doc      *network.Response
	history  []string // URLs the page's script put in the history (pushState, replaceState)
	// committed is set once the main frame committed a document since reset: before,
	// the document in the tab is the last page's.
	committed bool
}

func newNetTracker() *netTracker {
	return &netTracker{inflight: map[network.RequestID]bool{}, last: time.Now()}
}

// reset forgets the previous page (before the next one loads).
func (t *netTracker) reset() {
	t.mu.Lock()
	clear(t.inflight)
	t.last, t.doc, t.history, t.committed = time.Now(), nil, nil, false
	t.mu.Unlock()
}

func (t *netTracker) setMain(id cdp.FrameID) {
	t.mu.Lock()
	t.main = id
	t.mu.Unlock()
}

// on is the tab's event listener: it must be quick and send no command.
func (t *netTracker) on(ev any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch ev := ev.(type) {
	case *network.EventRequestWillBeSent:
		if ev.Type == network.ResourceTypeWebSocket || ev.Type == network.ResourceTypeEventSource {
			return // open for the page's life: never idle otherwise
		}
		t.inflight[ev.RequestID] = true
		t.last = time.Now()
	case *network.EventLoadingFinished:
		delete(t.inflight, ev.RequestID)
		t.last = time.Now()
	case *network.EventLoadingFailed:
		delete(t.inflight, ev.RequestID)
		t.last = time.Now()
	case *network.EventResponseReceived:
		if ev.Type == network.ResourceTypeDocument && ev.FrameID == t.main {
			t.doc = ev.Response
		}
	case *page.EventNavigatedWithinDocument:
		if ev.FrameID == t.main && len(t.history) < maxHistory && ev.NavigationType == page.NavigatedWithinDocumentNavigationTypeHistoryAPI {
			t.history = append(t.history, ev.URL)
		}
	case *page.EventFrameNavigated:
		if ev.Frame != nil && ev.Frame.ID == t.main {
			t.committed = true
		}
		if ev.Frame != nil && ev.Frame.ID == t.main && ev.Type == page.NavigationTypeNavigation {
			t.history = t.history[:0] // a new document: the old one's history URLs are not its links
		}
	}
}

// maxHistory bounds the history URLs kept per page.
const maxHistory = 100

// historyURLs returns the URLs the page put in the history since its document loaded.
func (t *netTracker) historyURLs() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.history...)
}

// hasCommitted reports whether the main frame committed a document since reset.
func (t *netTracker) hasCommitted() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.committed
}

// lastDocument returns the main frame's last document response, nil before one.
func (t *netTracker) lastDocument() *network.Response {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.doc
}

// waitIdle waits until no request has been in flight for quiet, counted from the
// later of the last request's start or end and since (when the action that may start
// requests ran), at most maxIdleWait; false when it gave up or ctx ended.
func (t *netTracker) waitIdle(ctx context.Context, quiet time.Duration, since time.Time) bool {
	deadline := time.Now().Add(maxIdleWait)
	for {
		t.mu.Lock()
		n, last := len(t.inflight), t.last
		t.mu.Unlock()
		if last.Before(since) {
			last = since
		}
		since := time.Since(last)
		if n == 0 && since >= quiet {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		wait := pollEvery
		if n == 0 {
			wait = min(quiet-since, pollEvery*4)
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(wait):
		}
	}
}

// waitIdle waits for the page's network to go idle after since, counting a wait that
// gave up.
func (r *pageRun) waitIdle(since time.Time) {
	if !r.tab.net.waitIdle(r.ctx, r.pool.cfg.IdleQuiet, since) && r.ctx.Err() == nil {
		r.idleTimeouts.Add(1)
	}
}

// behave waits as the page's Wait says, then runs its actions.
func (r *pageRun) behave(res *Result) error {
	w := r.job.Page.WaitFor()
	if err := r.wait(w); err != nil {
		return err
	}
	for i, a := range pageActions(r.job.Page) {
		if err := r.act(a); err != nil {
			return fmt.Errorf("action %d: %w", i, err)
		}
	}
	return nil
}

func pageActions(p *spiders.Page) []spiders.Action {
	if p == nil {
		return nil
	}
	return p.Actions
}

// budget returns a context for a wait or a scroll that may take at most half the time
// the page has left (of the caller's deadline), and whether the page has a deadline.
// What runs out of it is cut short and the page is taken as it is: an endless feed
// scrolled until the page's deadline failed as a whole, with 57-87 batches loaded.
// The other half is for the actions after it, the DOM and the cookies.
func (r *pageRun) budget() (context.Context, context.CancelFunc) {
	if r.deadline.IsZero() {
		return context.WithCancel(r.ctx)
	}
	return context.WithDeadline(r.ctx, time.Now().Add(time.Until(r.deadline)/2))
}

// cut reports whether err ended a wait or a scroll because its budget (bctx) ran out
// while the page still had time, and counts it.
func (r *pageRun) cut(bctx context.Context, err error) bool {
	if err == nil || bctx.Err() == nil || r.ctx.Err() != nil {
		return false
	}
	r.budgetCuts.Add(1)
	return true
}

// wait waits for every condition of w: the selector and the pause (each within its
// budget), the network idle.
func (r *pageRun) wait(w spiders.Wait) error {
	if w.Selector != "" {
		if err := r.waitSelector(w.Selector); err != nil {
			return err
		}
	}
	if w.NetworkIdle {
		r.waitIdle(time.Time{})
	}
	if w.MS > 0 {
		bctx, cancel := r.budget()
		defer cancel()
		select {
		case <-bctx.Done():
			if err := context.Cause(bctx); !r.cut(bctx, err) {
				return err
			}
		case <-time.After(time.Duration(w.MS) * time.Millisecond):
		}
	}
	return nil
}

// waitSelector polls until an element matches sel or its budget runs out (then the
// page is taken as it is, counted).
func (r *pageRun) waitSelector(sel string) error {
	bctx, cancel := r.budget()
	defer cancel()
	expr := "document.querySelector(" + jsString(sel) + ") !== null"
	for {
		found, err := chromedp.Run(bctx, chromedp.Evaluate[bool](expr))
		if r.cut(bctx, err) {
			return nil
		}
		if err != nil && !navigating(err) {
			return fmt.Errorf("wait for %s: %w", sel, err)
		}
		if found && err == nil {
			return nil
		}
		select {
		case <-bctx.Done():
			if r.cut(bctx, bctx.Err()) {
				return nil
			}
			return fmt.Errorf("wait for %s: %w", sel, context.Cause(r.ctx))
		case <-time.After(pollEvery * 2):
		}
	}
}

// navigating reports whether err is an evaluation that the page's navigation cut off
// (the document it ran in was replaced): a wait for what the next document shows asks
// again in that one, rather than failing the page (seen under load: a script redirect
// landing while the wait's evaluation ran).
func navigating(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "Inspected target navigated or closed") ||
		strings.Contains(msg, "Execution context was destroyed") ||
		strings.Contains(msg, "Cannot find context with specified id")
}

// act runs one action.
func (r *pageRun) act(a spiders.Action) error {
	switch {
	case a.Click != "":
		return r.eval(`(() => { const e = document.querySelector(`+jsString(a.Click)+`);
			if (!e) return false; e.scrollIntoView({block: "center"}); e.click(); return true })()`, true)
	case a.Fill != nil:
		return r.eval(`(() => { const e = document.querySelector(`+jsString(a.Fill.Selector)+`);
			if (!e) return false; e.focus(); e.value = `+jsString(a.Fill.Value)+`;
			e.dispatchEvent(new Event("input", {bubbles: true})); e.dispatchEvent(new Event("change", {bubbles: true}));
			return true })()`, false)
	case a.Scroll != nil:
		return r.scroll(*a.Scroll)
	}
	return nil
}

// eval runs a script, then waits for the network to go idle when idle is set.
func (r *pageRun) eval(js string, idle bool) error {
	start := time.Now()
	if _, err := chromedp.Run(r.ctx, chromedp.Evaluate[bool](js)); err != nil {
		return err
	}
	if idle {
		r.waitIdle(start)
	}
	return nil
}

// scrollJS scrolls to the bottom and returns the page's height and element count
// before the scroll, once the page has reacted to the scroll. A page hears of a scroll
// at its next frame (scroll events, then animation frames; intersection observers
// right after), and a busy machine or page can hold that frame back longer than the
// idle quiet: the promise ends a frame after that one, when whatever the page's
// handlers started (the fetch of the next batch) is in flight for the idle wait to see.
// A hidden page has no frames (and no scroll events): it is not waited for.
const scrollJS = `new Promise(done => { const s = document.scrollingElement || document.body;
	const m = [s.scrollHeight, document.getElementsByTagName("*").length]; window.scrollTo(0, s.scrollHeight);
	if (document.hidden) done(m); else requestAnimationFrame(() => requestAnimationFrame(() => done(m))) })`

// measureJS returns the page's height and element count.
const measureJS = `(() => { const s = document.scrollingElement || document.body; return [s.scrollHeight, document.getElementsByTagName("*").length] })()`

// scroll scrolls to the bottom s.Times times, or until a scroll changes nothing (at
// most spiders.MaxScrolls times), waiting after each for the page to react to it
// (scrollJS) and then for the network to go idle. It stops when its budget runs out
// (an endless feed never stops growing): what loaded so far is the page.
func (r *pageRun) scroll(s spiders.Scroll) error {
	bctx, cancel := r.budget()
	defer cancel()
	times := s.Times
	if s.UntilIdle {
		times = spiders.MaxScrolls
	}
	for i := 0; i < times; i++ {
		before, err := chromedp.Run(bctx, chromedp.Evaluate[[]int64](scrollJS, chromedp.EvalAwaitPromise))
		if r.cut(bctx, err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("scroll: %w", err)
		}
		// The quiet counts from the page's reaction, not from the scroll.
		if !r.tab.net.waitIdle(bctx, r.pool.cfg.IdleQuiet, time.Now()) && bctx.Err() == nil {
			r.idleTimeouts.Add(1)
		}
		if r.cut(bctx, bctx.Err()) {
			return nil
		}
		if !s.UntilIdle {
			continue
		}
		after, err := chromedp.Run(bctx, chromedp.Evaluate[[]int64](measureJS))
		if r.cut(bctx, err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("scroll: %w", err)
		}
		if len(before) == 2 && len(after) == 2 && before[0] == after[0] && before[1] == after[1] {
			return nil
		}
	}
	return nil
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}

// cdpTime converts the protocol's seconds since the epoch.
func cdpTime(sec float64) time.Time {
	whole := int64(sec)
	return time.Unix(whole, int64((sec-float64(whole))*1e9))
}
