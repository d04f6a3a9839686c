// Package browser renders pages in headless Chromium for the fetch package: a managed
// pool of browsers per fetch process (Pool), driven over the DevTools protocol with
// chromedp, with Debian's chromium (found on PATH) or a browser running elsewhere
// (Config.URL).
//
// Render loads one page (a Job: URL, user agent, headers, cookies, page behaviour as
// spiders.Page data, a dialer, a navigation check) and returns its DOM after the wait
// conditions and actions, with the main document's status and headers, the cookies of
// the page's context, and what its requests did.
//
// Nothing of one page acts on the next: every window a page opens is closed as soon as
// it is seen and its tab is not reused; a navigation made while such a window is open,
// or, before the page's document replaces the last page's, one that is not the page's,
// is refused.
//
// The rules every fetch obeys hold for every request a page makes: each tab has a
// browser context whose proxy is an in-process forward proxy (HTTP and CONNECT) that
// dials through the Job's dialer (the fetcher's network guard, through the crawl's
// proxy when there is one), with --proxy-bypass-list=<-loopback> so loopback goes
// through it too; whatever a script does, it cannot reach an address the guard
// refuses. Every document the main frame loads is first asked about (Job.Navigate):
// the fetcher checks scope and robots.txt there, as for a redirect.
//
// The pool runs at most Browsers browsers of Tabs tabs each, starts a browser when a
// page needs one (LaunchTimeout), replaces one after RetireAfter pages or above
// MaxMemory (the PSS of its process tree, read from /proc), kills one that goes above
// MaxMemory + MemoryAllowance while it renders (measured every PageSampleInterval; its
// pages fail with ErrBrowserLost saying why), closes idle ones, and
// replaces one that crashes (its pages fail with ErrBrowserLost, to be fetched
// again). The process becomes a child subreaper and reaps what browsers leave, so no
// zombie stays behind.
//
// Each behaviour lives in one file:
//
//	config.go     Config, its defaults and FindChromium
//	pool.go       Pool: tabs handed out, retirement, crashes, the memory watch, Close
//	launch.go     starting (or connecting to) a browser and closing it
//	tab.go        a tab: its browser context and proxy, opened once, cleared between pages; popups closed
//	page.go       Render: one page in a tab, its interception, the DOM out
//	download.go   DownloadError: a document the browser takes for a download
//	actions.go    wait conditions (selector, network idle, ms), click, scroll, fill; their budgets
//	proxy.go      the page proxy: CONNECT tunnels and plain requests through the dialer,
//	              each asked of Job.Request first (the fetcher's pacing and cap)
//	procs_linux.go memory of a process tree, subreaping and reaping orphans
package browser
