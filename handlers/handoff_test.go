package handlers_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/spiders/demosite"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// A process running the fetch and parse stages hands its fetched responses to its own
// parse stage, which does not decode their entries (responses_handoff_hits); a process
// whose hand-off cannot hold a response decodes every entry; a parse process that
// fetches nothing has no hand-off. Each stores every product of the shop once.
func TestResponseHandoff(t *testing.T) {
	t.Parallel()
	site := demosite.New(300)
	shop := httptest.NewServer(site)
	t.Cleanup(shop.Close)
	want := site.ExpectedItems(shop.URL + "/")
	for _, tc := range []struct {
		name   string
		bytes  int64 // Config.HandoffBytes
		split  bool  // fetch in one Crawl call, parse and store in another
		anyHit bool
	}{
		{name: "one process", anyHit: true},
		{name: "too small for a response", bytes: 1},
		{name: "fetch and parse apart", split: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := streamstest.Start(t)
			sp, _, err := spiders.Parse("shop.yaml", []byte(site.SpiderYAML("handoff", shop.URL+"/")))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			sink := newMemSink()
			if tc.split {
				fetched := make(chan error, 1)
				go func() {
					_, err := handlers.Crawl(ctx, sp, quick(handlers.Options{HandoffBytes: tc.bytes, Redis: srv.URL(), Stages: []string{streams.StageFetch}}))
					fetched <- err
				}()
				if _, err := handlers.Crawl(ctx, sp, quick(handlers.Options{HandoffBytes: tc.bytes, Redis: srv.URL(), NoSeed: true,
					Stages: []string{streams.StageParse, streams.StageStore}, Sink: sink})); err != nil {
					t.Fatal(err)
				}
				if err := <-fetched; err != nil {
					t.Fatal(err)
				}
			} else if _, err := handlers.Crawl(ctx, sp, quick(handlers.Options{HandoffBytes: tc.bytes, Redis: srv.URL(), Sink: sink})); err != nil {
				t.Fatal(err)
			}
			keys := sink.keys()
			if len(keys) != len(want) {
				t.Fatalf("sink holds %d items, the shop has %d products", len(keys), len(want))
			}
			for k, n := range keys {
				if n != 1 {
					t.Errorf("item %s stored %d times", k, n)
				}
			}
			rdb := srv.Client()
			l, err := streams.ReadLayout(ctx, rdb, sp.Name)
			if err != nil {
				t.Fatal(err)
			}
			st, err := inspect.ReadStatus(ctx, rdb, l)
			if err != nil {
				t.Fatal(err)
			}
			hits, misses, parsed := st.Stats["responses_handoff_hits"], st.Stats["responses_handoff_misses"], st.Stats["pages_parsed"]
			t.Logf("%d pages parsed: %d hand-off hits, %d misses", parsed, hits, misses)
			if parsed < int64(len(want)) {
				t.Fatalf("%d pages parsed, want at least %d", parsed, len(want))
			}
			switch {
			case tc.anyHit && (hits == 0 || hits+misses != parsed):
				t.Errorf("%d hits and %d misses for %d pages parsed: want some hits, and one of the two per page", hits, misses, parsed)
			case !tc.anyHit && hits != 0:
				t.Errorf("%d hand-off hits, want none", hits)
			case tc.split && misses != 0:
				t.Errorf("a parse process that fetches nothing counted %d hand-off misses: it has no hand-off", misses)
			case !tc.split && !tc.anyHit && misses != parsed:
				t.Errorf("%d misses for %d pages parsed: with no response kept, every page is a miss", misses, parsed)
			}
		})
	}
}
