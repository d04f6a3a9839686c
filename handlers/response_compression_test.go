package handlers_test

import (
	"context"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/handlers/internal/wire"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// With response_compression: off a crawl stores every response as fetched (no zstd
// frame, no content_encoding, no dictionary trained) and parses every page; at a level
// every stored response is a zstd frame; with s2 every one is an S2 block and no
// dictionary is trained. The responses are retained so that the test
// reads each one back; so unset (the default) every one is a zstd frame too.
func TestResponseCompressionSetting(t *testing.T) {
	t.Parallel()
	for _, c := range []string{wire.CompressOff, wire.CompressBetter, wire.CompressS2, ""} {
		t.Run("setting="+c, func(t *testing.T) {
			t.Parallel()
			srv := streamstest.Start(t)
			rdb := srv.Client()
			const pages = 150
			base := serve(t, newChainSite(pages, time.Millisecond))
			name := "compress" + c
			sp := titleSpider(name, base)
			sp.Settings.ResponseCompression = c
			sp.Settings.Retention = map[string]spiders.StreamRetention{"responses": {MaxAge: time.Hour}}
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			sink := newMemSink()
			if err := runCrawl(ctx, t, rdb, sp, sink, func(*handlers.RunConfig) {}); err != nil {
				t.Fatal(err)
			}
			if n := len(sink.items); n != pages {
				t.Fatalf("%d items, want %d", n, pages)
			}
			keys := streams.NewKeys(name)
			entries, err := rdb.XRange(ctx, keys.Responses, "-", "+").Result()
			if err != nil {
				t.Fatal(err)
			}
			compressed, decoded := 0, 0
			for _, e := range entries {
				payload, _ := e.Values["payload"].(string)
				if wire.Compressed([]byte(payload)) {
					compressed++
				}
				if c == wire.CompressS2 && wire.Encoding([]byte(payload)) != wire.EncodingS2 {
					t.Fatalf("s2: a response stored as %q", wire.Encoding([]byte(payload)))
				}
				if c == "" && wire.Encoding([]byte(payload)) != wire.EncodingZstd {
					t.Fatalf("default, responses retained: a response stored as %q", wire.Encoding([]byte(payload)))
				}
				if _, err := wire.Unmarshal([]byte(payload)); err == nil {
					decoded++
				}
			}
			want := 0
			if c != wire.CompressOff {
				want = len(entries)
			}
			if len(entries) < pages || decoded != len(entries) || compressed != want {
				t.Fatalf("%d responses stored (want at least %d), %d decode, %d compressed (want %d)", len(entries), pages, decoded, compressed, want)
			}
			if c == wire.CompressOff || c == wire.CompressS2 {
				if n := rdb.HLen(ctx, keys.Dicts).Val(); n != 0 {
					t.Fatalf("compression %s: %d fields in the dicts hash, want none", c, n)
				}
			}
		})
	}
}
