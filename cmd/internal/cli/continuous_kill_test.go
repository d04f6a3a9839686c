package cli

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/spiders/demosite"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// scheduledRevisitURLs returns the URLs in the crawl's revisit schedule (one
// partition), as canonical path?query, and how often each is there.
func scheduledRevisitURLs(t *testing.T, c *cluster) map[string]int {
	t.Helper()
	ctx := context.Background()
	k := streams.NewLayout(c.name, 1).Parts[0]
	out := map[string]int{}
	url := regexp.MustCompile(`"url":"([^"]+)"`)
	for _, m := range c.rdb.ZRange(ctx, k.Revisits, 0, -1).Val() {
		for _, e := range c.rdb.LRange(ctx, k.Revisits+":"+m, 0, -1).Val() {
			if sub := url.FindStringSubmatch(e); sub != nil {
				u, err := strconv.Unquote(`"` + sub[1] + `"`)
				if err == nil {
					u, err = spiders.CanonicalURL(u)
				}
				if err != nil {
					t.Fatal(err)
				}
				out[strings.TrimPrefix(u, strings.TrimSuffix(c.base, "/"))]++
			} else {
				t.Errorf("scheduled revisit without a URL: %q", e)
			}
		}
	}
	return out
}

// A fetch process of a continuous crawl killed (kill -9) right before its 50th ack,
// its output (the response; the next revisit of a page that did not answer 200)
// already in Redis: every revisit
// scheduled before the kill is still scheduled after it, and once a replacement has
// finished the first pass every page that answered 200 is scheduled exactly once,
// although the pages the dead fetcher held were fetched again (at-least-once fetches,
// exactly-once schedule: the chain mark makes a fetch done twice schedule once).
func TestKilledFetcherOfAContinuousCrawlLosesAndDoublesNoRevisit(t *testing.T) {
	t.Parallel()
	site := demosite.New(200)
	c := newCluster(t, "rvkill", site)
	c.addSetting("revisit:\n    rules:\n      - {min: 1m, max: 1h, start: 30m}")
	c.seed()
	mode := []string{"--continuous", "--idle-window", "10m"}
	procs := []*proc{c.stage(streams.StageParse, "parse-1", nil, mode...), c.stage(streams.StageStore, "store-1", nil, mode...)}
	faulty := c.stage(streams.StageFetch, "fetch-1", []string{fmt.Sprintf("%s=%s:%d", faultEnv, streams.StageFetch, crashAt), "GOMAXPROCS=2"}, mode...)
	if code, ok := faulty.Wait(crawlTimeout); !ok || code != 137 {
		logStatus(t, c.rdb, c.name)
		t.Fatalf("fetch-1: exit %d (ended %v), want 137 (killed before ack #%d)", code, ok, crashAt)
	}
	// A 200's revisit is scheduled by the parse stage, once the page's items and links
	// are out (its digest is theirs): the fetches acked before the kill have theirs once
	// parse-1 has done every response in the stream.
	waitParsed(t, c)
	before := scheduledRevisitURLs(t, c)
	held := consumerPending(t, c.rdb, c.name, streams.StageFetch)["fetch-1"]
	// Of the crashAt-1 requests fetch-1 acked, those of pages that do not answer 200 (each
	// 404 once, each 500 once per attempt) schedule no revisit; which of them came first
	// depends on the processes' pace.
	notOK := len(site.ReachableKind(false, demosite.NotFound)) + fetchAttempts*len(site.ReachableKind(false, demosite.ServerError))
	if least := crashAt - 1 - notOK; len(before) < least {
		t.Fatalf("%d revisits scheduled when fetch-1 died before ack #%d, want at least %d (%d acks less the %d requests that answer no 200)",
			len(before), crashAt, least, crashAt-1, notOK)
	}
	procs = append(procs, c.stage(streams.StageFetch, "fetch-1", nil, mode...))
	waitAll(t, crawlTimeout, c.rdb, c.name, procs...)
	checkExit0(t, procs...)
	after := scheduledRevisitURLs(t, c)

	for u := range before {
		if after[u] == 0 {
			t.Errorf("%s was scheduled before the kill and is not after it", u)
		}
	}
	canon := func(path string) string {
		u, err := spiders.CanonicalURL(strings.TrimSuffix(c.base, "/") + path)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimPrefix(u, strings.TrimSuffix(c.base, "/"))
	}
	want := map[string]bool{}
	for _, u := range site.Reachable(false) {
		want[canon(u)] = true
	}
	for _, k := range []demosite.Kind{demosite.NotFound, demosite.ServerError} {
		for _, u := range site.ReachableKind(false, k) {
			delete(want, canon(u))
		}
	}
	for u, n := range after {
		if n != 1 || !want[u] {
			t.Errorf("%s scheduled %d times (a page answering 200: %v), want once", u, n, want[u])
		}
	}
	if len(after) != len(want) {
		t.Errorf("%d URLs scheduled, want the %d that answer 200", len(after), len(want))
	}
	refetched := 0
	for _, n := range site.Requests() {
		if n > 1 {
			refetched++
		}
	}
	counter, _ := c.rdb.HGet(context.Background(), streams.NewLayout(c.name, 1).Parts[0].Counts, "revisits").Int()
	if counter != len(after) {
		t.Errorf("revisits counter %d, schedule holds %d", counter, len(after))
	}
	t.Logf("fetch-1 killed holding %d requests: %d revisits scheduled before, %d after (%d pages answer 200); %d URLs requested more than once (retries of the 500s included)",
		held, len(before), len(after), len(want), refetched)
}

// waitParsed waits until the parse stage of c holds no response and has none unread.
func waitParsed(t *testing.T, c *cluster) {
	t.Helper()
	deadline := time.Now().Add(crawlTimeout)
	for {
		p, err := inspect.ReadProgress(context.Background(), c.rdb, streams.NewLayout(c.name, 1))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range p.Stages {
			if s.Group == streams.StageParse && s.Pending == 0 && !s.Unread {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the parse stage still holds or has unread responses after %s: %+v", crawlTimeout, p.Stages)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
