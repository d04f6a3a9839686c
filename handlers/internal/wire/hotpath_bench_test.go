package wire_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/streamcrawl/streamcrawl/handlers/internal/wire"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/spiders/demosite"
)

// The wire format's part of the parse stage's per-page hot path (spiders'
// hotpath_bench_test.go has the rest), on a product page of the demo shop (about 20 KB).
// Run with -benchmem; compare builds with benchstat.

const benchOrigin = "http://127.0.0.1:8080"

// benchPage renders one page of the 20,000-page demo shop in memory.
func benchPage(b *testing.B, path string) *spiders.Response {
	b.Helper()
	site := demosite.New(20000)
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, benchOrigin+path, nil)
	site.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		b.Fatalf("GET %s: %d", path, rec.Code)
	}
	r, err := spiders.NewRequest(benchOrigin+path, "")
	if err != nil {
		b.Fatal(err)
	}
	return &spiders.Response{Request: r, URL: r.URL, Status: 200, Headers: rec.Header(), Body: rec.Body.Bytes(),
		FetchedAt: time.Unix(1700000000, 0)}
}

func BenchmarkMarshalResponse(b *testing.B) {
	res := benchPage(b, "/p/17")
	b.SetBytes(int64(len(res.Body)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := wire.Marshal(res); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUnmarshalResponse(b *testing.B) {
	res := benchPage(b, "/p/17")
	payload, err := wire.Marshal(res)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(res.Body)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := wire.UnmarshalLimit(payload, 10<<20); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkResponseZstdOnly decompresses a stored response without decoding its JSON:
// what Unmarshal costs beyond it is the JSON (the body unescaped out of it).
func BenchmarkResponseZstdOnly(b *testing.B) {
	res := benchPage(b, "/p/17")
	payload, err := wire.Marshal(res)
	if err != nil {
		b.Fatal(err)
	}
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	var out []byte
	b.SetBytes(int64(len(res.Body)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if out, err = d.DecodeAll(payload, out[:0]); err != nil {
			b.Fatal(err)
		}
	}
}
