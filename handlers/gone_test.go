package handlers_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/processors"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// flipSite serves /p/<i> as a page of title "page <i>" with a fixed ETag, or answers
// the status set for it (a 301 to /p/moved); extra, when set, adds to each page what changes on every
// answer (its argument counts the answers). It records the status of each answer.
type flipSite struct {
	mu     sync.Mutex
	status map[string]int // path -> status (default 200)
	codes  map[int]int    // status -> count
	served int
	etag   bool
	extra  func(n int) string
}

func (s *flipSite) set(path string, code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status[path] = code
}

func (s *flipSite) takeCodes() map[int]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.codes
	s.codes = map[int]int{}
	return c
}

func (s *flipSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.URL.Path, "/p/") {
		http.NotFound(w, r)
		return
	}
	s.mu.Lock()
	code := s.status[r.URL.Path]
	if code == 0 {
		code = http.StatusOK
	}
	if code == http.StatusOK && s.etag {
		w.Header().Set("ETag", `"same"`)
		if r.Header.Get("If-None-Match") == `"same"` {
			code = http.StatusNotModified
		}
	}
	s.codes[code]++
	s.served++
	n := s.served
	s.mu.Unlock()
	if code != http.StatusOK {
		if code == http.StatusMovedPermanently {
			w.Header().Set("Location", "/p/moved")
		}
		w.WriteHeader(code)
		return
	}
	extra := ""
	if s.extra != nil {
		extra = s.extra(n)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, "<html><body><h1>page %s</h1>%s</body></html>", strings.TrimPrefix(r.URL.Path, "/p/"), extra)
}

// revisitSpider is titleSpider on the pages /p/0 .. /p/<n-1> of base, with one revisit
// rule: start 10m, max 1h.
func revisitSpider(name, base string, n int) *spiders.Spider {
	sp := titleSpider(name, base)
	sp.StartURLs = nil
	for i := range n {
		sp.StartURLs = append(sp.StartURLs, fmt.Sprintf("%s/p/%d", base, i))
	}
	sp.Settings.PerHostConcurrency = -1
	sp.Settings.ObeyRobots = new(bool)
	sp.Settings.Revisit.Rules = []spiders.RevisitRule{{Match: `/p/`, Min: time.Minute, Max: time.Hour, Start: 10 * time.Minute}}
	return sp
}

// releaseAt releases the revisits of crawl that are due shift from now and returns how
// many requests then wait.
func releaseAt(ctx context.Context, t *testing.T, rdb redis.UniversalClient, crawl string, shift time.Duration) int {
	t.Helper()
	layout := streams.NewLayout(crawl, 1)
	f, err := frontier.New(frontier.Config{Client: rdb, Layout: layout, SeenCache: -1, RevisitClockShift: shift})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close(context.Background())
	if err := f.ReleaseRevisits(ctx); err != nil {
		t.Fatal(err)
	}
	w, _ := rdb.HGet(ctx, layout.Parts[0].Counts, "waiting").Int()
	return w
}

// tombstones returns the tombstone items the sink holds.
func (m *memSink) tombstones() []spiders.Item {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []spiders.Item
	for _, it := range m.last {
		if it.Type == handlers.GoneType {
			out = append(out, it)
		}
	}
	return out
}

// A page that answers 200, then 404 twice, then 200 again is fetched again after the
// 404s at the rule's max interval (not dropped from the schedule), its consumers get
// one tombstone for the transition (not one per failed revisit), and when it is back
// it is fetched whole (its validators were dropped with the 404) and its item is a new
// version although its values are those of the first.
func TestAPageThatWentAndCameBackIsRevisitedAndTombstonedOnce(t *testing.T) {
	t.Parallel()
	rdb := streamstest.Start(t).Client()
	site := &flipSite{status: map[string]int{}, codes: map[int]int{}, etag: true}
	base := serve(t, site)
	sp := revisitSpider("rvgone", base, 2)
	sink := newMemSink()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	k := streams.NewLayout("rvgone", 1).Parts[0]
	crawl := func(step string) {
		t.Helper()
		if err := runCrawl(ctx, t, rdb, sp, sink, nil); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
	}
	crawl("first crawl")
	if c := site.takeCodes(); c[200] != 2 {
		t.Fatalf("first crawl: codes %v, want 2 × 200", c)
	}

	site.set("/p/0", http.StatusNotFound)
	if w := releaseAt(ctx, t, rdb, "rvgone", 11*time.Minute); w != 2 {
		t.Fatalf("%d requests waiting 11 minutes on, want both revisits", w)
	}
	crawl("revisit that finds /p/0 gone")
	if c := site.takeCodes(); c[404] != 1 || c[304] != 1 {
		t.Fatalf("first revisit: codes %v, want one 404 and one 304", c)
	}
	if got := revisitIntervals(ctx, t, rdb, k); got["3600000"] != 1 || got["1200000"] != 1 {
		t.Fatalf("after the 404: intervals %v, want /p/0 at 3600000 (max) and /p/1 at 1200000 (doubled)", got)
	}
	if ts := sink.tombstones(); len(ts) != 1 || ts[0].Fields["url"] != base+"/p/0" || ts[0].Fields["http_status"] != float64(404) && ts[0].Fields["http_status"] != 404 ||
		ts[0].Fields["_status"] != "gone" {
		t.Fatalf("tombstones after the 404: %+v, want one for /p/0 with http_status 404", ts)
	}

	// Twenty minutes on, /p/1 (unchanged, at 20m) is due and /p/0 (gone, at 1h) is not.
	if w := releaseAt(ctx, t, rdb, "rvgone", 31*time.Minute); w != 1 {
		t.Fatalf("%d requests waiting 31 minutes on, want /p/1's revisit only", w)
	}
	crawl("revisit of /p/1")
	if c := site.takeCodes(); c[304] != 1 || len(c) != 1 {
		t.Fatalf("revisit of /p/1: codes %v, want one 304", c)
	}
	if w := releaseAt(ctx, t, rdb, "rvgone", 62*time.Minute); w != 2 {
		t.Fatalf("%d requests waiting 62 minutes on, want /p/0's revisit (max 1h) and /p/1's (40m)", w)
	}
	crawl("second revisit of the gone page")
	if c := site.takeCodes(); c[404] != 1 || c[304] != 1 || len(c) != 2 {
		t.Fatalf("second revisit of /p/0: codes %v, want one 404 and one 304", c)
	}
	if ts := sink.tombstones(); len(ts) != 1 {
		t.Fatalf("%d tombstones after a second 404, want still 1: %+v", len(ts), ts)
	}

	site.set("/p/0", http.StatusOK)
	if w := releaseAt(ctx, t, rdb, "rvgone", 2*time.Hour+2*time.Minute); w != 2 {
		t.Fatalf("%d requests waiting two hours on, want both revisits", w)
	}
	crawl("revisit that finds /p/0 back")
	if c := site.takeCodes(); c[200] != 1 || c[304] != 1 {
		t.Fatalf("the page back: codes %v, want /p/0 fetched whole (200; its validators went with the 404) and /p/1 304", c)
	}
	key := fmt.Sprintf(`["page",%q]`, base+"/p/0")
	it, ok := sink.item(key)
	if !ok || it.Version != 2 || sink.keys()[key] != 2 {
		t.Fatalf("item of /p/0 back: %+v stored %d times, want version 2, stored twice", it, sink.keys()[key])
	}
	stats := rdb.HGetAll(ctx, streams.NewLayout("rvgone", 1).Global.Stats).Val()
	if stats["items_gone"] != "1" || stats["revisits_back"] != "1" || stats["revisits_gone"] != "2" {
		t.Fatalf("stats %v, want items_gone 1, revisits_back 1, revisits_gone 2", stats)
	}
	if intervals := revisitIntervals(ctx, t, rdb, k); intervals["600000"] != 1 {
		t.Fatalf("after the page came back: intervals %v, want /p/0 at 600000 (the start)", intervals)
	}
}

// A gone page is checked gone_checks times, then its revisits end. A URL whose first
// answer is already bad (a dead link) is not scheduled at all.
func TestAGonePageIsGivenUpAfterItsChecks(t *testing.T) {
	t.Parallel()
	rdb := streamstest.Start(t).Client()
	site := &flipSite{status: map[string]int{"/p/1": http.StatusNotFound}, codes: map[int]int{}}
	base := serve(t, site)
	sp := revisitSpider("rvgiveup", base, 2)
	sp.Settings.Revisit.Rules[0].GoneChecks = 2
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	k := streams.NewLayout("rvgiveup", 1).Parts[0]
	if err := runCrawl(ctx, t, rdb, sp, newMemSink(), nil); err != nil {
		t.Fatal(err)
	}
	if rv, _ := rdb.HGet(ctx, k.Counts, "revisits").Int(); rv != 1 {
		t.Fatalf("%d revisits scheduled after the first crawl, want 1 (/p/0; /p/1 never answered 200)", rv)
	}
	site.set("/p/0", http.StatusGone)
	for i := range 4 {
		releaseAt(ctx, t, rdb, "rvgiveup", time.Duration(i+1)*62*time.Minute)
		if err := runCrawl(ctx, t, rdb, sp, newMemSink(), nil); err != nil {
			t.Fatal(err)
		}
	}
	if c := site.takeCodes(); c[410] != 3 || c[404] != 1 || c[200] != 1 {
		t.Fatalf("codes %v, want 200 and 404 (the first crawl), then 3 × 410: the first bad answer and its 2 checks", c)
	}
	if rv, _ := rdb.HGet(ctx, k.Counts, "revisits").Int(); rv != 0 {
		t.Fatalf("%d revisits still scheduled, want none after gone_checks", rv)
	}
}

// A 304 to a GET that carried no validator (the site sends none, so none is stored) is
// not "not modified": it is retried as a bad answer, and the page's interval is not
// doubled for it.
func TestAnUnsolicitedNotModifiedIsNotTakenForUnchanged(t *testing.T) {
	t.Parallel()
	rdb := streamstest.Start(t).Client()
	site := &flipSite{status: map[string]int{}, codes: map[int]int{}}
	base := serve(t, site)
	sp := revisitSpider("rvunsolicited", base, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := runCrawl(ctx, t, rdb, sp, newMemSink(), nil); err != nil {
		t.Fatal(err)
	}
	site.takeCodes()
	site.set("/p/0", http.StatusNotModified)
	if w := releaseAt(ctx, t, rdb, "rvunsolicited", 11*time.Minute); w != 1 {
		t.Fatalf("%d waiting, want the revisit", w)
	}
	if err := runCrawl(ctx, t, rdb, sp, newMemSink(), nil); err != nil {
		t.Fatal(err)
	}
	if c := site.takeCodes(); c[304] < 2 {
		t.Fatalf("codes %v, want the unsolicited 304 retried", c)
	}
	layout := streams.NewLayout("rvunsolicited", 1)
	stats := rdb.HGetAll(ctx, layout.Global.Stats).Val()
	if stats["not_modified"] != "" || stats["unsolicited_not_modified"] == "" || stats["revisits_unchanged"] != "" {
		t.Fatalf("stats %v: want no not_modified, some unsolicited_not_modified, no unchanged revisit", stats)
	}
	if got := revisitIntervals(ctx, t, rdb, layout.Parts[0]); got["1200000"] != 0 || got["3600000"] != 1 {
		t.Fatalf("intervals %v, want the page checked at max (3600000) as a bad answer, not doubled (1200000)", got)
	}
}

// A page whose bytes differ on every fetch only in what no item or link holds (a token
// in an HTML comment, a CSRF input) is unchanged for the schedule: its interval
// doubles as an unchanged page's does, instead of halving towards min.
func TestARotatingTokenInACommentIsNoChange(t *testing.T) {
	t.Parallel()
	rdb := streamstest.Start(t).Client()
	site := &flipSite{status: map[string]int{}, codes: map[int]int{}, extra: func(n int) string {
		return fmt.Sprintf(`<!-- token %d --><form><input type="hidden" name="csrf" value="c%d"></form>`, n, n*7919)
	}}
	base := serve(t, site)
	sp := revisitSpider("rvtoken", base, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for i := range 2 {
		if i > 0 {
			if w := releaseAt(ctx, t, rdb, "rvtoken", 11*time.Minute); w != 3 {
				t.Fatalf("%d waiting, want the 3 revisits", w)
			}
		}
		if err := runCrawl(ctx, t, rdb, sp, newMemSink(), nil); err != nil {
			t.Fatal(err)
		}
	}
	if c := site.takeCodes(); c[200] != 6 {
		t.Fatalf("codes %v, want 6 × 200 (no validators: fetched whole)", c)
	}
	layout := streams.NewLayout("rvtoken", 1)
	if got := revisitIntervals(ctx, t, rdb, layout.Parts[0]); got["1200000"] != 3 || len(got) != 1 {
		t.Fatalf("intervals %v, want 3 × 1200000 (unchanged: doubled)", got)
	}
	if s := rdb.HGetAll(ctx, layout.Global.Stats).Val(); s["revisits_unchanged"] != "3" || s["revisits_changed"] != "" {
		t.Fatalf("stats %v, want 3 unchanged revisits, none changed", s)
	}
}

// An item field declared volatile (settings.revisit.volatile), which has another value
// on every fetch, makes no new item version: the item is stored once across fetches,
// and the page counts as unchanged.
func TestAVolatileFieldMakesNoItemVersion(t *testing.T) {
	t.Parallel()
	rdb := streamstest.Start(t).Client()
	site := &flipSite{status: map[string]int{}, codes: map[int]int{}, extra: func(n int) string {
		return fmt.Sprintf(`<span class="views">%d</span>`, n)
	}}
	base := serve(t, site)
	sp := revisitSpider("rvvolatile", base, 1)
	sp.Handle("parse", func(ctx context.Context, res *spiders.Response, out *spiders.Output) error {
		doc, err := res.Doc()
		if err != nil {
			return err
		}
		out.Yield(spiders.NewItem("page", map[string]any{"title": doc.Find("h1").Text(), "url": res.URL, "views": doc.Find(".views").Text()}))
		return nil
	})
	sp.Settings.Revisit.Volatile = []string{"views"}
	sink := newMemSink()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for i := range 3 {
		if i > 0 {
			if w := releaseAt(ctx, t, rdb, "rvvolatile", time.Duration(i)*41*time.Minute); w != 1 {
				t.Fatalf("fetch %d: %d waiting, want the revisit", i+1, w)
			}
		}
		if err := runCrawl(ctx, t, rdb, sp, sink, nil); err != nil {
			t.Fatal(err)
		}
	}
	if c := site.takeCodes(); c[200] != 3 {
		t.Fatalf("codes %v, want 3 × 200", c)
	}
	key := fmt.Sprintf(`["page",%q]`, base+"/p/0")
	if n := sink.keys()[key]; n != 1 {
		t.Fatalf("item stored %d times over 3 fetches, want once (views is volatile)", n)
	}
	layout := streams.NewLayout("rvvolatile", 1)
	if s := rdb.HGetAll(ctx, layout.Global.Stats).Val(); s["items_unchanged"] != "2" || s["revisits_unchanged"] != "2" {
		t.Fatalf("stats %v, want 2 items unchanged and 2 unchanged revisits", s)
	}
}

// A page that redirects on a revisit is gone as its own URL: one tombstone (reason
// redirect, its status), its revisits go on at the rule's max, and the target is a URL
// of its own, fetched once and scheduled on its own chain at the start interval.
func TestARedirectedPageKeepsItsRevisitsAndTheTargetIsItsOwnURL(t *testing.T) {
	t.Parallel()
	rdb := streamstest.Start(t).Client()
	site := &flipSite{status: map[string]int{}, codes: map[int]int{}}
	base := serve(t, site)
	sp := revisitSpider("rvmoved", base, 1)
	sink := newMemSink()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := runCrawl(ctx, t, rdb, sp, sink, nil); err != nil {
		t.Fatal(err)
	}
	site.set("/p/0", http.StatusMovedPermanently)
	if w := releaseAt(ctx, t, rdb, "rvmoved", 11*time.Minute); w != 1 {
		t.Fatalf("%d waiting, want the revisit", w)
	}
	if err := runCrawl(ctx, t, rdb, sp, sink, nil); err != nil {
		t.Fatal(err)
	}
	if c := site.takeCodes(); c[301] != 1 || c[200] != 2 {
		t.Fatalf("codes %v, want 2 × 200 (the page, then the target) and one 301", c)
	}
	ts := sink.tombstones()
	if len(ts) != 1 || ts[0].Fields["reason"] != "redirect" || ts[0].Fields["http_status"] != float64(301) {
		t.Fatalf("tombstones %+v, want one with reason redirect, http_status 301", ts)
	}
	k := streams.NewLayout("rvmoved", 1).Parts[0]
	if got := revisitIntervals(ctx, t, rdb, k); got["3600000"] != 1 || got["600000"] != 1 || len(got) != 2 {
		t.Fatalf("intervals %v, want the source at 3600000 (max) and the target at 600000 (its start)", got)
	}
}

// The tombstone reaches the file sinks: a JSONL line of _type _gone with its status, and
// a CSV row whose columns were given for it.
func TestATombstoneIsALineInTheFileSinks(t *testing.T) {
	t.Parallel()
	rdb := streamstest.Start(t).Client()
	site := &flipSite{status: map[string]int{}, codes: map[int]int{}}
	base := serve(t, site)
	sp := revisitSpider("rvgonefile", base, 1)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	open := func() processors.Sink {
		j, err := processors.OpenJSONL(filepath.Join(dir, "items.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		c, err := processors.OpenCSV(filepath.Join(dir, "items.csv"), []string{"_key", "_type", "_url", "title", "_status", "http_status"})
		if err != nil {
			t.Fatal(err)
		}
		return bothSinks{j, c}
	}
	for i, code := range []int{http.StatusOK, http.StatusNotFound} {
		site.set("/p/0", code)
		if i > 0 {
			releaseAt(ctx, t, rdb, "rvgonefile", 11*time.Minute)
		}
		if err := runCrawl(ctx, t, rdb, sp, open(), nil); err != nil {
			t.Fatal(err)
		}
	}
	lines, err := os.ReadFile(filepath.Join(dir, "items.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var gone []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(lines)), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatal(err)
		}
		if rec["_type"] == handlers.GoneType {
			gone = append(gone, rec)
		}
	}
	if len(gone) != 1 || gone[0]["_status"] != "gone" || gone[0]["http_status"] != float64(404) || gone[0]["url"] != base+"/p/0" {
		t.Fatalf("JSONL tombstones %v, want one for /p/0 with _status gone, http_status 404", gone)
	}
	rows, err := csv.NewReader(bytes.NewReader(must(os.ReadFile(filepath.Join(dir, "items.csv"))))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || rows[2][1] != handlers.GoneType || rows[2][4] != "gone" || rows[2][5] != "404" {
		t.Fatalf("CSV rows %q, want the header, the page, and the tombstone (_gone, gone, 404)", rows)
	}
}

// bothSinks stores each item in two sinks.
type bothSinks [2]processors.Sink

func (b bothSinks) Store(ctx context.Context, it *spiders.Item) (bool, error) {
	stored := false
	for _, s := range b {
		ok, err := s.Store(ctx, it)
		if err != nil {
			return false, err
		}
		stored = stored || ok
	}
	return stored, nil
}

func (b bothSinks) Close(ctx context.Context) error {
	return errors.Join(b[0].Close(ctx), b[1].Close(ctx))
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
