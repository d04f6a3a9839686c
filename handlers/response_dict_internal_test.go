package handlers

import (
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/handlers/internal/wire"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

func dictSamplesFor(n int) [][]byte {
	var out [][]byte
	for i := 0; i < n; i++ {
		r := &spiders.Response{Request: &spiders.Request{URL: fmt.Sprintf("http://127.0.0.1/p/%d", i)},
			URL: fmt.Sprintf("http://127.0.0.1/p/%d", i), Status: 200, FetchedAt: time.Unix(1700000000, 0).UTC(),
			Body: fmt.Appendf(nil, "<html><head><title>Product %d</title></head><body><div class=price>%d.99</div>"+
				"<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit %d</p></body></html>", i, i%97, i*7)}
		js, _ := wire.Plain(r)
		out = append(out, js)
	}
	return out
}

// A process that meets a response compressed with a dictionary it does not hold loads
// it from the crawl's dicts hash by the ID in the frame; a dictionary missing from
// Redis is a poison error naming it; Redis unreachable is an error that is not poison
// (the delivery is retried, not dead-lettered).
func TestEnsureResponseDict(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := t.Context()
	keys := streams.NewKeys("ens")
	d, err := wire.TrainDict(dictSamplesFor(64))
	if err != nil {
		t.Fatal(err)
	}
	res := &spiders.Response{Request: &spiders.Request{URL: "http://127.0.0.1/p/1"}, URL: "http://127.0.0.1/p/1",
		Status: 200, Body: []byte("<html><title>Product 1</title></html>")}
	payload, err := wire.MarshalDict(res, d)
	if err != nil {
		t.Fatal(err)
	}
	// Not in Redis: a clear poison error.
	err = ensureResponseDict(ctx, rdb, keys, payload)
	if !errors.Is(err, streams.ErrPoison) || !errors.Is(err, wire.ErrUnknownDict) {
		t.Fatalf("missing dictionary: %v, want a poison ErrUnknownDict", err)
	}
	// Published under another crawl's key does not count either; under this crawl's, it loads.
	other := streams.NewKeys("ens2")
	id := strconv.FormatUint(uint64(d.ID()), 10)
	rdb.HSet(ctx, other.Dicts, id, d.Bytes(), "current", id)
	if err := ensureResponseDict(ctx, rdb, other, payload); err != nil {
		t.Fatal(err)
	}
	got, err := wire.Unmarshal(payload)
	if err != nil || string(got.Body) != string(res.Body) {
		t.Fatalf("decode after loading: %v", err)
	}
	// Redis down, dictionary unknown: not poison.
	d2, err := wire.TrainDict(dictSamplesFor(80))
	if err != nil {
		t.Fatal(err)
	}
	p2, _ := wire.MarshalDict(res, d2)
	srv.Kill()
	err = ensureResponseDict(ctx, rdb, streams.NewKeys("ens3"), p2)
	if err == nil || errors.Is(err, streams.ErrPoison) {
		t.Fatalf("redis down: %v, want an error that is not poison", err)
	}
}

// Two processes training at once publish one dictionary: the second adopts the first's.
func TestPublishDictOneWins(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := t.Context()
	k := streams.NewKeys("win")
	a := &responseDicts{rdb: rdb, key: k.Dicts, log: nil}
	b := &responseDicts{rdb: rdb, key: k.Dicts, log: nil}
	a.log, b.log = zap.NewNop(), zap.NewNop()
	if err := a.train(ctx, dictSamplesFor(64)); err != nil {
		t.Fatal(err)
	}
	if err := b.train(ctx, dictSamplesFor(70)); err != nil {
		t.Fatal(err)
	}
	if a.cur.Load() == nil || b.cur.Load() == nil || a.cur.Load().ID() != b.cur.Load().ID() {
		t.Fatal("the two trainers use different dictionaries")
	}
	fields := rdb.HKeys(ctx, k.Dicts).Val()
	if len(fields) != 2 {
		t.Fatalf("dicts hash has fields %v, want current and one dictionary", fields)
	}
}

// With response_compression unset, a fetch process stores responses as S2 blocks when
// the crawl does not retain them once parsed and as zstd frames (with the crawl's
// dictionary once one is published) when it does; a setting the spider names wins
// either way.
func TestDefaultResponseCompressionFollowsRetention(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	rdb := srv.Client()
	res := &spiders.Response{Request: &spiders.Request{URL: "http://127.0.0.1/p/1"}, URL: "http://127.0.0.1/p/1",
		Status: 200, Body: []byte("<html><title>Product 1</title><p>Lorem ipsum dolor sit amet</p></html>")}
	for _, tc := range []struct {
		setting  string
		retained bool
		want     string
	}{
		{"", false, wire.EncodingS2},
		{"", true, wire.EncodingZstd},
		{wire.CompressFastest, false, wire.EncodingZstd},
		{wire.CompressS2, true, wire.EncodingS2},
		{wire.CompressOff, true, ""},
	} {
		layout := streams.NewLayout(fmt.Sprintf("enc%s%t", tc.setting, tc.retained), 1)
		enc := responseEncoder(spiders.Settings{ResponseCompression: tc.setting}, tc.retained, rdb, layout, nil, zap.NewNop())
		payload, err := enc(t.Context(), res)
		if err != nil {
			t.Fatal(err)
		}
		if got := wire.Encoding(payload); got != tc.want {
			t.Errorf("setting %q, retained %t: stored as %q, want %q", tc.setting, tc.retained, got, tc.want)
		}
		back, err := wire.Unmarshal(payload)
		if err != nil || string(back.Body) != string(res.Body) {
			t.Errorf("setting %q, retained %t: decode: %v", tc.setting, tc.retained, err)
		}
	}
}
