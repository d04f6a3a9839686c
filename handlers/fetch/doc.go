// Package fetch turns a crawl's requests into responses. One type, Fetcher, built from a
// Config, does it: Do fetches one request under the crawl's rules and returns a Result
// that says what the stage must do with it (publish the response, retry it at a time,
// drop it with a reason, or dead-letter it with its error). The fetch stage of package
// handlers is Do between a request message and a response message.
//
// The round trip itself is what one kind of fetcher does its own way (the roundTripper
// interface): over HTTP, or in a browser (sub-package browser) for the requests that
// ask to be rendered; every rule around it is shared, so both obey the same guard,
// robots.txt, politeness turn, cookies and proxies.
//
// Each behaviour lives in one file:
//
//	fetcher.go     Config, Fetcher, Do and its Result; what every kind shares
//	http.go        the HTTP round trip: headers, proxy, cookies, status, body
//	browser.go     the browser round trip: which requests are rendered, the DOM as the body
//	browser_nav.go a rendered page's navigations checked like redirects, counted, paced
//	browser_pace.go a rendered page's requests: other hosts paced, the page's cap
//	browser_dial.go the dialer of a rendered page: the guard, the crawl's proxies
//	browser_cookies.go the crawl's cookie jar in and out of a page's browser context
//	adaptive.go    render: auto, per page type
//	httpclient.go  the HTTP client: timeouts, connection pool, redirect limit, decoding
//	guard.go       the network guard: no private address unless allowed, on every dial
//	redirects.go   every redirect hop checked like a link: scope, rules, robots.txt
//	robots.go      robots.txt: fetched once per crawl and origin, cached in Redis
//	turn.go        the host's politeness turn: its slot back, back-offs, AutoThrottle
//	fence.go       the last check before a request leaves: its entry and slot still held
//	fleetgate.go   hosts other crawls reach too: one pace for all, the fleet-wide gate
//	               (streams/hostgate) passed before each request to them
//	politeness.go  the spider's per-host rules (defaults, limits) as the frontier takes them
//	cookies.go     cookie sessions: shared in Redis, per process, or off
//	login.go       the spider's login step, once per crawl
//	proxies.go     proxy rotation, per-proxy limits, benching; the guard for proxied targets
//	conditional.go conditional revisits (ETag, Last-Modified, 304) of the URLs fetched
//	               again, whatever schedules them (package spiders, "Revisits", maps every piece)
//	bodybudget.go  the process's budget of body bytes in flight
//	retry.go       which failures are retried, and how long each retry waits
//	hoststats.go   per-host request counts, times and failures for the dashboard (into
//	               streams.HostStats)
//
// Hosts are named by spiders.HostKey everywhere: robots.txt by origin (scheme and host
// key), cookies by the key's site, limits and the guard by the key's name.
package fetch
