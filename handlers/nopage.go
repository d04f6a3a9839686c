package handlers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// ErrNoPageFetched is wrapped in the error Crawl returns when a crawl ended done
// without fetching a page although its start URLs were tried: each answered a final
// 4xx, kept failing (5xx, a refused or timed-out connection) until its retries ran out,
// had a host whose robots.txt stayed unreachable, or was dropped before it was sent.
// The message names each start URL (the first ten) and what became of it. When every
// request was dropped before it was sent, the error wraps ErrEveryRequestDropped too
// and names the reasons with the setting that changes each.
var ErrNoPageFetched = errors.New("fetched no page")

// maxStartFates is how many start URLs that error names; the rest are counted.
const maxStartFates = 10

// maxDeadRead bounds the dead letters read to find what became of the start URLs.
const maxDeadRead = 1000

// endings are the counters of requests that got a final answer that is no page and
// left no dead letter, besides the final HTTP errors (finalAnswers) and the drops
// before sending (dropReasons), with what each says happened.
var endings = []struct{ counter, what string }{
	{"not_modified", "answered 304 Not Modified (unchanged since its last fetch)"},
	{"redirects_not_followed", "answered a redirect, which max_redirects 0 does not follow"},
	{"redirect_location_invalid", "answered a redirect to an unusable Location"},
	{"bodies_not_text", "answered with a binary body where a page was expected"},
}

// noPageFetched returns the error of a crawl that is done and fetched no page although
// something was tried (an answer, a drop or a dead letter is recorded); nil for any
// other crawl. It names the start URLs of sp, and runtime seeds found among the dead
// letters, each with what became of it: its dead letter's error (a request's, or that
// of the last hop of its redirects); else the one outcome the crawl's counters hold for
// the requests that left none, or all of them when they hold several (which start URL
// had which is not recorded).
func noPageFetched(ctx context.Context, rdb redis.UniversalClient, l streams.Layout, sp *spiders.Spider, st *inspect.Status) error {
	if st == nil || !st.Done || st.Stats["pages_fetched"] > 0 {
		return nil
	}
	dropped, reasons := droppedBy(st)
	var ends []string // the outcomes that are answers: "<n> <what>"
	if n, what := finalAnswers(st); n > 0 {
		ends = append(ends, fmt.Sprintf("%d %s", n, what))
	}
	for _, e := range endings {
		if n := st.Stats[e.counter]; n > 0 {
			ends = append(ends, fmt.Sprintf("%d %s", n, e.what))
		}
	}
	if dropped == 0 && len(ends) == 0 && st.DeadLetters == 0 {
		return nil // nothing was tried: nothing to name
	}
	fates, seeds, linked, err := deadFates(ctx, rdb, l)
	if err != nil {
		return fmt.Errorf("handlers: crawl %s %w (its dead letters could not be read: %w)", st.Crawl, ErrNoPageFetched, err)
	}
	if linked {
		return nil // a dead letter of a link: a page was fetched to find it
	}
	// Every request dropped before it was sent: no answer, and no dead letter but
	// those of hosts whose robots.txt was unreachable (a drop too).
	allDropped := dropped > 0 && len(ends) == 0 && st.DeadLetters <= st.Stats["robots_unreachable"]
	outcomes := ends
	for _, r := range dropReasons {
		if n := st.Stats[r.counter]; n > 0 && r.counter != "robots_unreachable" { // those are dead letters
			outcomes = append(outcomes, fmt.Sprintf("%d %s", n, r.what))
		}
	}
	rest := "not fetched, and no failure recorded"
	switch {
	case len(outcomes) == 1:
		_, rest, _ = strings.Cut(outcomes[0], " ") // without its count
	case len(outcomes) > 1:
		rest = "one of: " + strings.Join(outcomes, ", ") + " (the crawl's counts; which start URL had which is not recorded)"
	}
	var starts []string
	if reqs, err := sp.StartRequests(); err == nil {
		for _, r := range reqs {
			starts = append(starts, spiders.RedactedURL(r.URL))
		}
	}
	for _, u := range seeds {
		if !slices.Contains(starts, u) {
			starts = append(starts, u)
		}
	}
	var named []string
	for i, u := range starts {
		if i == maxStartFates {
			named = append(named, fmt.Sprintf("and %d more start URLs", len(starts)-i))
			break
		}
		fate, ok := fates[u]
		if !ok {
			fate = rest
		}
		named = append(named, fmt.Sprintf("start URL %s: %s", u, fate))
	}
	list := strings.Join(named, "; ")
	if allDropped {
		return fmt.Errorf("handlers: crawl %s %w: %w: %s; %s", st.Crawl, ErrNoPageFetched, ErrEveryRequestDropped, reasons, list)
	}
	if dropped > 0 {
		list += "; dropped: " + reasons
	}
	return fmt.Errorf("handlers: crawl %s %w: %s", st.Crawl, ErrNoPageFetched, list)
}

// finalAnswers returns how many requests got a final HTTP error (a 4xx but 408 and
// 429, which are retried) and says which: "answered HTTP 404 (final, not retried)", or
// "answered HTTP 404 or 410 (final, not retried: 404 ×2, 410 ×1)" when the crawl's
// status counters hold several codes.
func finalAnswers(st *inspect.Status) (int64, string) {
	n := st.Stats["http_errors_final"]
	if n == 0 {
		return 0, ""
	}
	var codes []int
	for k, v := range st.Stats {
		num, ok := strings.CutPrefix(k, "status_")
		c, err := strconv.Atoi(num)
		if ok && err == nil && v > 0 && c >= 400 && c < 500 && c != 408 && c != 429 {
			codes = append(codes, c)
		}
	}
	slices.Sort(codes)
	switch len(codes) {
	case 0:
		return n, "answered a final HTTP error (4xx, not retried)"
	case 1:
		return n, fmt.Sprintf("answered HTTP %d (final, not retried)", codes[0])
	}
	names, each := make([]string, len(codes)), make([]string, len(codes))
	for i, c := range codes {
		names[i] = strconv.Itoa(c)
		each[i] = fmt.Sprintf("%d ×%d", c, st.Stats["status_"+names[i]])
	}
	return n, "answered HTTP " + strings.Join(names, " or ") + " (final, not retried: " + strings.Join(each, ", ") + ")"
}

// deadFates reads the crawl's dead letters (up to maxDeadRead) and returns the error of
// each start request's, by its URL (the first URL of a redirect chain: the error then
// says where the chain led), and those URLs in the order found. linked reports a dead
// letter of a page's link, which proves a page was fetched.
func deadFates(ctx context.Context, rdb redis.UniversalClient, l streams.Layout) (fates map[string]string, order []string, linked bool, err error) {
	dead, err := inspect.ListDead(ctx, rdb, l, maxDeadRead)
	if err != nil {
		return nil, nil, false, err
	}
	fates = map[string]string{}
	for _, d := range dead {
		why := d.Error
		for _, p := range []string{streams.ErrPoison.Error() + ": ", "robots_unreachable: ", "fetch: "} {
			why = strings.TrimPrefix(why, p)
		}
		var start string
		if r, err := spiders.UnmarshalRequest([]byte(d.Fields["payload"])); err == nil {
			if r.Depth > 0 { // a hop keeps its request's depth: start requests' are 0
				return nil, nil, true, nil
			}
			start = spiders.RedactedURL(r.URL)
			// The URL is named once, before the error: not again inside it.
			why = strings.Replace(why, "gave up on "+start+" after", "gave up after", 1)
			why = strings.ReplaceAll(why, "fetch: "+start+": ", "")
			if len(r.RedirectURLs) > 0 {
				start = spiders.RedactedURL(r.RedirectURLs[0])
				why = "redirected to " + spiders.RedactedURL(r.URL) + ", which failed: " + why
			}
		} else if d.Stage == "seed" {
			start = d.Fields["payload"] // a runtime seed that is no request
		}
		if _, seen := fates[start]; start != "" && !seen {
			fates[start] = why
			order = append(order, start)
		}
	}
	return fates, order, false, nil
}
