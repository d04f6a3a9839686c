package frontier_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/spiders/newssite"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// dayResult is what a simulated day of revisits scored.
type dayResult struct {
	fetches     int
	changes     int           // changes the site made
	caught      int           // changes a fetch saw (the first fetch at or after them)
	staleSum    time.Duration // sum over caught changes of the delay to that fetch
	worstFactor float64       // the largest delay ÷ the page's change interval
}

func (r dayResult) meanStale() time.Duration {
	if r.caught == 0 {
		return 0
	}
	return r.staleSum / time.Duration(r.caught)
}

// simulateDay runs a day of revisits of site through the real schedule in Redis
// (ScheduleRevisit, the release into host queues, the dispatch into the requests
// stream), minute by minute on a shifted clock: next gives a page's next interval from
// the one that led to the fetch and whether the fetch saw a change. The payload a
// revisit carries is its interval state: "<page>|<interval ms>|<version seen>".
func simulateDay(t *testing.T, site *newssite.Site, next func(p newssite.Page, cur time.Duration, changed bool) time.Duration) dayResult {
	t.Helper()
	rdb := streamstest.Start(t).Client()
	ctx := context.Background()
	layout := streams.NewLayout("day", 1)
	k := layout.Parts[0]
	if err := rdb.XGroupCreateMkStream(ctx, k.Requests, streams.StageFetch, "$").Err(); err != nil {
		t.Fatal(err)
	}
	f, err := frontier.New(frontier.Config{Client: rdb, Layout: layout, SeenCache: -1, Window: 100000})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close(context.Background())
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	// The simulated day starts at the next whole minute of the Redis clock, so bucket
	// minutes and the site's change minutes line up.
	start := now.Truncate(time.Minute).Add(time.Minute)
	site.Start = start
	schedule := func(page int, interval time.Duration, seen int64) {
		payload := fmt.Sprintf("%d|%d|%d", page, interval.Milliseconds(), seen)
		if _, err := f.ScheduleRevisit(ctx, fmt.Sprintf("p%d.news.test", page), 0, 0, []byte(payload), interval, frontier.RevisitChain{}); err != nil {
			t.Fatal(err)
		}
	}
	f.SetRevisitShift(start.Sub(now) + time.Millisecond)
	for i, p := range site.Pages { // the first fetch, at the start
		schedule(i, next(p, 0, false), 0)
	}
	var r dayResult
	for _, p := range site.Pages {
		r.changes += int(site.Version(p, start.Add(24*time.Hour)))
	}
	for m := 1; m <= 24*60; m++ {
		at := start.Add(time.Duration(m) * time.Minute)
		// The schedule's "now" is the Redis clock shifted: keep it at the simulated
		// minute however long the real steps take (1 ms later, as the scripts'
		// clock is in whole ms).
		real, err := rdb.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		f.SetRevisitShift(at.Sub(real) + time.Millisecond)
		for {
			n, err := f.ReleaseDue(ctx, 0, 1000)
			if err != nil {
				t.Fatal(err)
			}
			if n < 1000 {
				break
			}
		}
		for {
			n, err := f.Dispatch(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				break
			}
		}
		for _, msg := range readAll(t, rdb, k, 100000) {
			var page int
			var ms, seen int64
			if _, err := fmt.Sscanf(strings.ReplaceAll(msg.Values["payload"].(string), "|", " "), "%d %d %d", &page, &ms, &seen); err != nil {
				t.Fatalf("payload %q: %v", msg.Values["payload"], err)
			}
			p := site.Pages[page]
			r.fetches++
			v := site.Version(p, at)
			for c := seen + 1; c <= v; c++ {
				delay := at.Sub(site.ChangedAt(p, c))
				r.caught++
				r.staleSum += delay
				r.worstFactor = max(r.worstFactor, float64(delay)/float64(p.Every))
			}
			schedule(page, next(p, time.Duration(ms)*time.Millisecond, v != seen), v)
			rdb.XAck(ctx, k.Requests, streams.StageFetch, msg.ID)
		}
	}
	if n := rdb.XLen(ctx, k.Requests).Val(); n != int64(r.fetches) {
		t.Fatalf("requests stream holds %d entries, the simulation fetched %d", n, r.fetches)
	}
	if rv, _ := rdb.HGet(ctx, k.Counts, "revisits").Int(); rv != len(site.Pages) {
		t.Fatalf("%d revisits scheduled at the end of the day, want one per page (%d)", rv, len(site.Pages))
	}
	return r
}

// fixedDay scores a day of fetching every page of site every interval from its start
// (the first fetch at the start, not counted, as simulateDay's): the baseline a fixed
// revisit interval gives, computed in process (a fixed schedule needs no Redis to know
// when it fetches).
func fixedDay(site *newssite.Site, interval time.Duration) dayResult {
	var r dayResult
	day := site.Start.Add(24 * time.Hour)
	for _, p := range site.Pages {
		r.changes += int(site.Version(p, day))
		seen := int64(0)
		for at := site.Start.Add(interval); !at.After(day); at = at.Add(interval) {
			r.fetches++
			v := site.Version(p, at)
			for c := seen + 1; c <= v; c++ {
				delay := at.Sub(site.ChangedAt(p, c))
				r.caught++
				r.staleSum += delay
				r.worstFactor = max(r.worstFactor, float64(delay)/float64(p.Every))
			}
			seen = v
		}
	}
	return r
}

// After a simulated day of a news site (4 pages changing every minute, 16 hourly, 40
// never), adaptive revisits with the rules a user writes for it (live pages: min 1m,
// max 1h, start 2m; the rest: min 10m, max 24h, start 1h) catch every change within 2×
// its page's change interval, with at least 2× fewer fetches than the longest fixed
// interval whose mean staleness is no worse (swept minute by minute up to an hour).
func TestAdaptiveRevisitsBeatAFixedIntervalOverASimulatedDay(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a simulated day: about 5 s")
	}
	rules := []spiders.RevisitRule{
		{Match: "^/live/", Min: time.Minute, Max: time.Hour, Start: 2 * time.Minute},
		{Min: 10 * time.Minute, Max: 24 * time.Hour, Start: time.Hour},
	}
	for i := range rules {
		if err := rules[i].Compile(); err != nil {
			t.Fatal(err)
		}
	}
	adaptive := simulateDay(t, newssite.New(time.Time{}, 4, 16, 40), func(p newssite.Page, cur time.Duration, changed bool) time.Duration {
		return spiders.RevisitFor(rules, p.Path).Next(cur, changed)
	})
	site := newssite.New(time.Now().Truncate(time.Minute), 4, 16, 40)
	var fixed, bounded dayResult
	var fixedEvery, boundedEvery time.Duration
	for every := time.Minute; every <= time.Hour; every += time.Minute {
		r := fixedDay(site, every)
		if r.meanStale() <= adaptive.meanStale() {
			fixed, fixedEvery = r, every
		}
		if r.worstFactor <= 2 && r.changes-r.caught <= 20 {
			bounded, boundedEvery = r, every
		}
	}
	if fixedEvery == 0 {
		t.Fatalf("no fixed interval of 1-60 min is as fresh as adaptive (mean staleness %v)", adaptive.meanStale())
	}
	for _, c := range []struct {
		name string
		r    dayResult
	}{{"adaptive", adaptive}, {fmt.Sprintf("fixed %v (as fresh)", fixedEvery), fixed}, {fmt.Sprintf("fixed %v (2× bound)", boundedEvery), bounded}} {
		t.Logf("%-22s fetches %6d, changes caught %d of %d, mean staleness %v, worst delay %.2f× the change interval",
			c.name, c.r.fetches, c.r.caught, c.r.changes, c.r.meanStale().Round(time.Second), c.r.worstFactor)
	}
	if adaptive.worstFactor > 2 {
		t.Errorf("adaptive: a change waited %.2f× its page's change interval, want at most 2×", adaptive.worstFactor)
	}
	if adaptive.changes-adaptive.caught > 20 {
		t.Errorf("adaptive: %d changes never seen, want only those of the day's last minutes", adaptive.changes-adaptive.caught)
	}
	if adaptive.fetches*2 > fixed.fetches {
		t.Errorf("adaptive fetched %d times, fixed %v (as fresh) %d: want at least 2× fewer", adaptive.fetches, fixedEvery, fixed.fetches)
	}
}
