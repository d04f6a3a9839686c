package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// versionedSite serves /p/<i> with an ETag and a Last-Modified per page version and
// answers 304 to a request that still has the current version.
type versionedSite struct {
	mu      sync.Mutex
	version map[int]int // page -> version (default 1)
	codes   map[int]int // status -> count
}

var siteEpoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func (s *versionedSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var i int
	if _, err := fmt.Sscanf(r.URL.Path, "/p/%d", &i); err != nil {
		http.NotFound(w, r)
		return
	}
	s.mu.Lock()
	v := max(s.version[i], 1)
	s.mu.Unlock()
	etag := fmt.Sprintf(`"p%d-v%d"`, i, v)
	modified := siteEpoch.Add(time.Duration(v) * time.Hour)
	w.Header().Set("ETag", etag)
	w.Header().Set("Last-Modified", modified.Format(http.TimeFormat))
	code := http.StatusOK
	if inm := r.Header.Get("If-None-Match"); inm != "" {
		if inm == etag {
			code = http.StatusNotModified
		}
	} else if ims, err := http.ParseTime(r.Header.Get("If-Modified-Since")); err == nil && !modified.After(ims) {
		code = http.StatusNotModified
	}
	s.mu.Lock()
	s.codes[code]++
	s.mu.Unlock()
	if code == http.StatusNotModified {
		w.WriteHeader(code)
		return
	}
	page(w, fmt.Sprintf("page %d version %d", i, v))
}

func (s *versionedSite) takeCodes() map[int]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.codes
	s.codes = map[int]int{}
	return c
}

// TestRevisitOfAnUnchangedSiteIsAllNotModified: a 1,000-page site crawled, then
// revisited (all URLs seeded again): every unchanged page answers 304 and is neither
// parsed nor stored again; the 10 pages changed in between are fetched and parsed.
func TestRevisitOfAnUnchangedSiteIsAllNotModified(t *testing.T) {
	t.Parallel()
	const n = 1000
	srv := streamstest.Start(t)
	rdb := srv.Client()
	site := &versionedSite{version: map[int]int{}, codes: map[int]int{}}
	base := serve(t, site)
	var urls []string
	for i := range n {
		urls = append(urls, fmt.Sprintf("%s/p/%d", base, i))
	}
	sp := titleSpider("revisit", base)
	sp.StartURLs = urls
	sp.Settings.Revisit.After = time.Millisecond
	sp.Settings.Capacity = n // sizes the validators' buckets
	sp.Settings.PerHostConcurrency = -1
	sp.Settings.ObeyRobots = new(bool)
	var parsedMu sync.Mutex
	parsed := map[string]int{}
	sp.Handle("parse", func(ctx context.Context, res *spiders.Response, out *spiders.Output) error {
		doc, err := res.Doc()
		if err != nil {
			return err
		}
		parsedMu.Lock()
		parsed[res.URL]++
		parsedMu.Unlock()
		title := doc.Find("h1").Text()
		out.Yield(spiders.NewItem("page", map[string]any{"title": title, "url": res.URL, "version": title[len(title)-1:]}))
		return nil
	})
	sp.Settings.DedupItems = new(bool) // a changed page's item is a new version of it
	sink := newMemSink()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	if err := runCrawl(ctx, t, rdb, sp, sink, nil); err != nil {
		t.Fatal(err)
	}
	if c := site.takeCodes(); c[200] != n {
		t.Fatalf("first crawl: %v, want %d × 200", c, n)
	}
	site.mu.Lock()
	for i := 100; i < 110; i++ {
		site.version[i] = 2
	}
	site.mu.Unlock()
	time.Sleep(5 * time.Millisecond) // past revisit.after
	if err := runCrawl(ctx, t, rdb, sp, sink, nil); err != nil {
		t.Fatal(err)
	}
	if c := site.takeCodes(); c[304] != n-10 || c[200] != 10 {
		t.Errorf("revisit: %v, want %d × 304 and 10 × 200", c, n-10)
	}
	for i := range n {
		u := fmt.Sprintf("%s/p/%d", base, i)
		want := 1
		if i >= 100 && i < 110 {
			want = 2
		}
		if parsed[u] != want {
			t.Errorf("%s parsed %d times, want %d", u, parsed[u], want)
		}
		if got := sink.keys()[fmt.Sprintf(`["page",%q]`, u)]; got != want {
			t.Errorf("%s stored %d times, want %d", u, got, want)
		}
	}
	st, err := inspect.ReadStatus(ctx, rdb, streams.NewLayout("revisit", 1))
	if err != nil {
		t.Fatal(err)
	}
	if st.Stats["not_modified"] != n-10 {
		t.Errorf("not_modified = %d, want %d", st.Stats["not_modified"], n-10)
	}
	keys, err := rdb.Keys(ctx, "sc:{revisit}:validators:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	var mem int64
	for _, k := range keys {
		m, err := rdb.MemoryUsage(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		mem += m
	}
	t.Logf("validators of %d URLs: %d bytes in Redis (%.1f per URL)", n, mem, float64(mem)/n)
}
