package wire_test

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/streamcrawl/streamcrawl/handlers/internal/wire"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/spiders/demosite"
)

// shopResponses renders n product pages of the demo shop as fetched responses.
func shopResponses(t testing.TB, from, n int) []*spiders.Response {
	t.Helper()
	site := demosite.New(20000)
	var out []*spiders.Response
	for id := from; id < from+n; id++ {
		u := fmt.Sprintf("http://127.0.0.1:8080/p/%d", id)
		rec := httptest.NewRecorder()
		site.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, u, nil))
		if rec.Code != 200 {
			t.Fatalf("%s: status %d", u, rec.Code)
		}
		out = append(out, &spiders.Response{Request: &spiders.Request{URL: u, Depth: 2}, URL: u, Status: 200,
			Headers: rec.Result().Header, Body: rec.Body.Bytes(), FetchedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)})
	}
	return out
}

func trainShop(t testing.TB) *wire.Dict {
	t.Helper()
	var samples [][]byte
	for _, r := range shopResponses(t, 1, 256) {
		js, err := wire.Plain(r)
		if err != nil {
			t.Fatal(err)
		}
		samples = append(samples, js)
	}
	d, err := wire.TrainDict(samples)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// A response compressed with a dictionary is smaller, names the dictionary in its frame,
// decodes to the same response once the dictionary is registered and is refused with
// ErrUnknownDict before; responses written without one still decode.
func TestResponseDict(t *testing.T) {
	d := trainShop(t)
	res := shopResponses(t, 5000, 20)
	var plain, withDict int
	for i, r := range res {
		a, err := wire.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b, err := wire.MarshalDict(r, d)
		if err != nil {
			t.Fatal(err)
		}
		plain, withDict = plain+len(a), withDict+len(b)
		if wire.DictID(a) != 0 || wire.DictID(b) != d.ID() {
			t.Fatalf("dictionary IDs: plain %d, with dict %d (want 0 and %d)", wire.DictID(a), wire.DictID(b), d.ID())
		}
		if i == 0 {
			_, err := wire.Unmarshal(b)
			if !errors.Is(err, wire.ErrUnknownDict) {
				t.Fatalf("decoding before the dictionary is registered: %v, want ErrUnknownDict", err)
			}
			wire.RegisterDict(d)
		}
		for _, payload := range [][]byte{a, b} {
			got, err := wire.Unmarshal(payload)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Body, r.Body) || got.URL != r.URL {
				t.Fatalf("round trip of %s changed the response", r.URL)
			}
		}
	}
	if withDict*100 > plain*85 {
		t.Fatalf("with the dictionary %d bytes, without %d: want at least 15%% less", withDict, plain)
	}
	t.Logf("20 product pages: %d bytes without dictionary, %d with (%.0f%%)", plain, withDict, 100*float64(withDict-plain)/float64(plain))
	// A stored dictionary loads back with its ID.
	d2, err := wire.NewDict(d.Bytes())
	if err != nil || d2.ID() != d.ID() {
		t.Fatalf("reload: %v, id %d want %d", err, d2.ID(), d.ID())
	}
	if _, err := wire.NewDict([]byte("not a dictionary")); err == nil {
		t.Fatal("garbage accepted as a dictionary")
	}
}

// BenchmarkResponseEncode: bytes per stored response (b/resp) and encode CPU per
// response, at the fastest and default zstd levels, with and without a dictionary
// trained on 256 other pages of the demo shop.
func BenchmarkResponseEncode(b *testing.B) {
	res := shopResponses(b, 3000, 200)
	d := trainShop(b)
	var js [][]byte
	for _, r := range res {
		j, _ := wire.Plain(r)
		js = append(js, j)
	}
	for _, level := range []zstd.EncoderLevel{zstd.SpeedFastest, zstd.SpeedDefault} {
		for _, withDict := range []bool{false, true} {
			opts := []zstd.EOption{zstd.WithEncoderLevel(level), zstd.WithEncoderConcurrency(1)}
			if withDict {
				opts = append(opts, zstd.WithEncoderDict(d.Bytes()))
			}
			enc, err := zstd.NewWriter(nil, opts...)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("%s/dict=%v", level, withDict), func(b *testing.B) {
				var out []byte
				total := 0
				for i := 0; b.Loop(); i++ {
					out = enc.EncodeAll(js[i%len(js)], out[:0])
					total += len(out)
				}
				b.ReportMetric(float64(total)/float64(b.N), "b/resp")
			})
		}
	}
	b.Run("MarshalDict", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, err := wire.MarshalDict(res[i%len(res)], d); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkUnmarshalResponseDict decodes a product page compressed with a dictionary
// trained on the demo shop: the worker's path once its crawl has a dictionary.
func BenchmarkUnmarshalResponseDict(b *testing.B) {
	res := shopResponses(b, 3000, 1)[0]
	d := trainShop(b)
	wire.RegisterDict(d)
	payload, err := wire.MarshalDict(res, d)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(res.Body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := wire.UnmarshalLimit(payload, 10<<20); err != nil {
			b.Fatal(err)
		}
	}
}
