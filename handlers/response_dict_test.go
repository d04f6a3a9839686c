package handlers_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/handlers/internal/wire"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// A crawl trains one response dictionary on its first responses, publishes it in its
// dicts hash and parses every page (whether later responses were compressed with it
// depends on how fast training was: TestArchiverKilledWritesEveryRecordOnce crawls with a
// published one); with response_dict: off it trains none.
//
// The crawl is 200 pages: the first 32 train the dictionary (dictSamples), the other
// 168 may be compressed with it.
func TestResponseDictTrainedOncePerCrawl(t *testing.T) {
	t.Parallel()
	const pages = 200
	for _, off := range []bool{false, true} {
		t.Run("off="+strconv.FormatBool(off), func(t *testing.T) {
			t.Parallel()
			srv := streamstest.Start(t)
			rdb := srv.Client()
			site := newChainSite(pages, 3*time.Millisecond)
			base := serve(t, site)
			name := "dict" + strconv.FormatBool(off)
			sp := titleSpider(name, base)
			// A zstd level: with responses not retained the default is S2, which has no
			// dictionary.
			sp.Settings.ResponseCompression = wire.CompressFastest
			if off {
				sp.Settings.ResponseDict = wire.DictOff
			}
			ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
			defer cancel()
			sink := newMemSink()
			if err := runCrawl(ctx, t, rdb, sp, sink, func(c *handlers.RunConfig) {}); err != nil {
				t.Fatal(err)
			}
			if n := len(sink.items); n != pages {
				t.Fatalf("%d items, want %d", n, pages)
			}
			keys := streams.NewKeys(name)
			encoded, _ := strconv.Atoi(rdb.HGet(ctx, keys.Stats, "responses_dict_encoded").Val())
			if off {
				if n := rdb.HLen(ctx, keys.Dicts).Val(); n != 0 || encoded != 0 {
					t.Fatalf("dictionary off: %d dicts fields, %d responses encoded with one", n, encoded)
				}
				return
			}
			// Training starts at the 64th response and runs in the background (longer
			// than the rest of this small crawl under -race): wait for its result.
			var dicts map[string]string
			for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				if dicts = rdb.HGetAll(ctx, keys.Dicts).Val(); dicts["current"] != "" {
					break
				}
			}
			cur := dicts["current"]
			if cur == "" || len(dicts) != 2 || len(dicts[cur]) == 0 {
				t.Fatalf("dicts hash has %d fields (current %q), want the current ID and one dictionary", len(dicts), cur)
			}
			const samples = 32 // handlers.dictSamples: the responses the dictionary is trained on
			if encoded > pages-samples {
				t.Fatalf("%d responses compressed with the dictionary, want at most the %d after the first %d", encoded, pages-samples, samples)
			}
			t.Logf("%d of %d responses compressed with dictionary %s (%d bytes)", encoded, pages, cur, len(dicts[cur]))
		})
	}
}
