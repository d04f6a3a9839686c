package handlers_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// A 6 KB forged entry in the responses stream whose body expands to 200 MB is refused
// by the parse stage at the spider's max_body_size and becomes one dead letter at once;
// the crawl goes on.
func TestForgedCompressedResponseIsADeadLetter(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	site := newChainSite(20, 0)
	base := serve(t, site)
	// Concatenated zstd frames decode as one stream: one 1 MB frame written 200 times.
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression))
	if err != nil {
		t.Fatal(err)
	}
	var forged bytes.Buffer
	forged.Write(enc.EncodeAll([]byte(`{"v":2,"request":{"v":1,"url":"`+base+`/bomb","callback":"parse"},"url":"`+base+`/bomb","status":200,"body_len":0,"text":"`), nil))
	frame := enc.EncodeAll([]byte(strings.Repeat("<p>", 1<<20/3)), nil)
	for i := 0; i < 200; i++ {
		forged.Write(frame)
	}
	forged.Write(enc.EncodeAll([]byte(`"}`), nil))
	t.Logf("forged entry: %d bytes compressed, ~200 MB decoded", forged.Len())
	k := streams.NewKeys("bomb")
	if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: k.Responses, Values: map[string]any{
		"_watermill_message_uuid": "u", "metadata": "", "payload": forged.Bytes()}}).Err(); err != nil {
		t.Fatal(err)
	}
	sink := newMemSink()
	if err := runCrawl(ctx, t, rdb, titleSpider("bomb", base), sink, nil); err != nil {
		t.Fatal(err)
	}
	wantAllPages(t, sink, base, 20)
	dead, err := inspect.ListDead(ctx, rdb, streams.NewLayout(k.Crawl, 1), 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(dead) != 1 || dead[0].Deliveries > 1 || !strings.Contains(dead[0].Error, "larger than max_body_size") {
		t.Fatalf("dead letters = %+v; want one, at once, saying the body is larger than max_body_size", dead)
	}
}
