package handlers_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// A crawl trains one response dictionary on its first responses, publishes it in its
// dicts hash, compresses the later responses with it, and parses every page; with
// response_dict: off it trains none.
func TestResponseDictTrainedOncePerCrawl(t *testing.T) {
	for _, off := range []bool{false, true} {
		t.Run("off="+strconv.FormatBool(off), func(t *testing.T) {
			srv := streamstest.Start(t)
			rdb := srv.Client()
			site := newChainSite(800, 3*time.Millisecond)
			base := serve(t, site)
			name := "dict" + strconv.FormatBool(off)
			sp := titleSpider(name, base)
			if off {
				sp.Settings.ResponseDict = spiders.ResponseDictOff
			}
			ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
			defer cancel()
			sink := newMemSink()
			if err := runCrawl(ctx, t, rdb, sp, sink, func(c *handlers.Config) {}); err != nil {
				t.Fatal(err)
			}
			if n := len(sink.items); n != 800 {
				t.Fatalf("%d items, want 800", n)
			}
			keys := frontier.NewKeys(name)
			dicts := rdb.HGetAll(ctx, keys.Dicts()).Val()
			encoded, _ := strconv.Atoi(rdb.HGet(ctx, keys.Stats(), "responses_dict_encoded").Val())
			if off {
				if len(dicts) != 0 || encoded != 0 {
					t.Fatalf("dictionary off: %d dicts fields, %d responses encoded with one", len(dicts), encoded)
				}
				return
			}
			cur := dicts["current"]
			if cur == "" || len(dicts) != 2 || len(dicts[cur]) == 0 {
				t.Fatalf("dicts hash has %d fields (current %q), want the current ID and one dictionary", len(dicts), cur)
			}
			if encoded == 0 || encoded > 800-256 {
				t.Fatalf("%d responses compressed with the dictionary, want some of the %d after the first 256", encoded, 800-256)
			}
			t.Logf("%d of 800 responses compressed with dictionary %s (%d bytes)", encoded, cur, len(dicts[cur]))
		})
	}
}
