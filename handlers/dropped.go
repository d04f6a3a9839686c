package handlers

import (
	"errors"
	"fmt"
	"strings"

	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// ErrEveryRequestDropped is wrapped, with ErrNoPageFetched, in the error Crawl returns
// when a crawl ended done without fetching a page because every request was dropped
// before it was sent: by the network guard, robots.txt (disallowed, or unreachable for
// every try) or a refused redirect. The message names the reasons and the setting that
// changes each, then each start URL and what became of it.
var ErrEveryRequestDropped = errors.New("every request was dropped")

// dropReason is a counter of requests dropped instead of fetched, what it means and
// what to change.
type dropReason struct {
	counter string
	what    string
	fix     string
}

// dropReasons are the ways a request is dropped instead of fetched, in the order the
// message names them. Links dropped by scope on a parsed page are not among them: a
// page was fetched to find them.
var dropReasons = []dropReason{
	{"dropped_private_address", "blocked by the network guard",
		"loopback/private address blocked: set AllowPrivateNetworks / allow_networks " +
			"(Go: Settings.AllowNetworks: []string{\"127.0.0.1/32\"} or Settings.AllowPrivateNetworks; " +
			"YAML: allow_networks: [127.0.0.1/32] or allow_private_networks: true)"},
	{"robots_disallowed", "disallowed by robots.txt",
		"the site's robots.txt forbids them: Settings.ObeyRobots / obey_robots: false ignores it, where the site allows that"},
	{"robots_unreachable", "with a host whose robots.txt stayed unreachable",
		"it answered 5xx or nothing for each of robots_unreachable_tries: check that the site is up, " +
			"then `streamcrawl dead retry` asks it again"},
	{"redirect_refused_robots", "redirected to URLs robots.txt disallows",
		"the target's robots.txt forbids them: Settings.ObeyRobots / obey_robots: false ignores it, where the site allows that"},
	{"redirect_refused_offsite", "redirected outside the spider's domains",
		"add the redirect's host to AllowedDomains / allowed_domains"},
	{"redirect_refused_rules", "redirected to URLs the follow rules refuse",
		"widen the follow rules' allow/deny (Go: Spider.FollowFilter)"},
	{"redirect_refused_scheme", "redirected to a scheme other than http(s)",
		"nothing to set: only http and https are fetched"},
}

// droppedBy returns how many requests of the crawl were dropped before they were sent,
// and names each reason with its count and the setting to change ("" when none).
func droppedBy(st *inspect.Status) (int64, string) {
	var dropped int64
	var reasons []string
	for _, r := range dropReasons {
		if n := st.Stats[r.counter]; n > 0 {
			dropped += n
			reasons = append(reasons, fmt.Sprintf("%d %s (%s)", n, r.what, r.fix))
		}
	}
	return dropped, strings.Join(reasons, "; ")
}

// droppedWarning is the warning of a crawl that is done and dropped more requests than
// it fetched pages, naming each reason as droppedBy does; "" for any other. A crawl
// that fetched no page gets an error instead (noPageFetched).
func droppedWarning(st *inspect.Status) string {
	if st == nil || !st.Done {
		return ""
	}
	dropped, reasons := droppedBy(st)
	if fetched := st.Stats["pages_fetched"]; fetched > 0 && dropped > fetched {
		return fmt.Sprintf("crawl %s: most requests were dropped, %d against %d pages fetched: %s", st.Crawl, dropped, fetched, reasons)
	}
	return ""
}
