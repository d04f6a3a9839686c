package handlers_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/spiders/webtest"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestRealWebPagesAreReadAsBrowsersReadThem crawls pages in latin1, windows-1252,
// Shift_JIS (declared in a <meta> only), GBK, EUC-KR, with a BOM, undeclared, deeply
// nested and compressed with br and zstd: every item holds the page's text as UTF-8,
// the two names that differ only in an accent are two items, and the PNG served as
// text/html is fetched once, counted and never retried.
func TestRealWebPagesAreReadAsBrowsersReadThem(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	rdb := srv.Client()
	site := webtest.New()
	base := serve(t, site)
	sp, _, err := spiders.Parse("realweb.yaml", []byte(webtest.SpiderYAML("realweb", base)))
	if err != nil {
		t.Fatal(err)
	}
	sink := newMemSink()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := runCrawl(ctx, t, rdb, sp, sink, nil); err != nil {
		t.Fatal(err)
	}
	got := sink.keys()
	for _, p := range site.Pages() {
		key, _ := json.Marshal([]string{"page", p.Name})
		if got[string(key)] != 1 {
			t.Errorf("%s: item %s stored %d times, want once; items: %v", p.Path, key, got[string(key)], got)
		}
	}
	if len(got) != len(site.Pages()) {
		t.Errorf("%d items stored, want %d: %v", len(got), len(site.Pages()), got)
	}
	if n := site.Hits()[webtest.BinaryPath]; n != 1 {
		t.Errorf("binary body fetched %d times, want once (not retried)", n)
	}
	st, err := inspect.ReadStatus(ctx, rdb, streams.NewLayout("realweb", 1))
	if err != nil {
		t.Fatal(err)
	}
	if st.Stats["bodies_not_text"] != 1 || st.DeadLetters != 0 {
		t.Errorf("bodies_not_text = %d (want 1), dead letters = %d (want 0)", st.Stats["bodies_not_text"], st.DeadLetters)
	}
	if st.Stats["bodies_decoded_shift_jis"] != 2 || st.Stats["bodies_decoded_gbk"] != 2 || st.Stats["bodies_decoded_euc-kr"] != 2 {
		t.Errorf("decoded counters: %v", st.Stats)
	}
}
