package handlers_test

import (
	"context"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// With default settings the responses leave Redis once parsed: a finished crawl leaves
// an empty responses stream, keeps its items, and status says so.
func TestDefaultRetentionKeepsNoBodies(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	rdb := srv.Client()
	site := newChainSite(40, 0)
	base := serve(t, site)
	sp := titleSpider("ret", base)
	sink := newMemSink()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := runCrawl(ctx, t, rdb, sp, sink, nil); err != nil {
		t.Fatal(err)
	}
	wantAllPages(t, sink, base, 40)
	k := streams.NewKeys("ret")
	if n := rdb.XLen(ctx, k.Responses).Val(); n != 0 {
		t.Errorf("responses stream holds %d entries after the crawl, want 0", n)
	}
	if n := rdb.XLen(ctx, k.Items).Val(); n != 40 {
		t.Errorf("items stream holds %d entries, want all 40 (kept a day)", n)
	}
	layout, err := handlers.OpenLayout(ctx, rdb, sp, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := inspect.ReadStatus(ctx, rdb, layout)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{k.Requests: "until acked", k.Responses: "until acked", k.Items: "max_age=24h0m0s max_bytes=16MB"}
	for _, s := range st.Streams {
		if w, ok := want[s.Name]; ok && s.Retention != w {
			t.Errorf("status retention of %s = %q, want %q", s.Name, s.Retention, w)
		}
	}

	// A retention in the spider keeps them.
	sp2 := titleSpider("ret2", base)
	sp2.Settings.Retention = map[string]spiders.StreamRetention{"responses": {MaxAge: time.Hour}}
	if err := runCrawl(ctx, t, rdb, sp2, newMemSink(), nil); err != nil {
		t.Fatal(err)
	}
	if n := rdb.XLen(ctx, streams.NewKeys("ret2").Responses).Val(); n != 40 {
		t.Errorf("responses kept %d entries with max_age 1h, want 40", n)
	}
}
