package wire_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/streamcrawl/streamcrawl/handlers/internal/wire"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/spiders/demosite"
)

// ceilingResponses are the parse ceiling's pages (spiders' BenchmarkParseCeiling: every
// 97th HTML page the demo shop's ground truth reaches, robots.txt obeyed) rendered at
// pageSize, as fetched responses.
func ceilingResponses(b *testing.B, pageSize int) []*spiders.Response {
	b.Helper()
	site := demosite.New(20000)
	site.SetPageSize(pageSize)
	var out []*spiders.Response
	for i, path := range site.ReachableKind(true, demosite.HTML) {
		if i%97 != 0 {
			continue
		}
		u := benchOrigin + path
		rec := httptest.NewRecorder()
		site.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, u, nil))
		if rec.Code != http.StatusOK {
			continue // the 404 and 500 pages the truth reaches
		}
		out = append(out, &spiders.Response{Request: &spiders.Request{URL: u, Depth: 2}, URL: u, Status: 200,
			Headers: http.Header{"Content-Type": {"text/html; charset=utf-8"}, "Date": {"Fri, 27 Nov 2026 02:00:00 GMT"}},
			Body:    rec.Body.Bytes(), FetchedAt: time.Date(2026, 11, 27, 2, 0, 0, 0, time.UTC)})
	}
	if len(out) < 100 {
		b.Fatalf("%d pages, want at least 100", len(out))
	}
	return out
}

// processCPU is this process's user and system CPU time: a benchmark reports it per op
// (cpu-µs/op) beside ns/op, which a machine loaded by other work inflates.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkResponseTrip: a response's trip through the responses stream, written by the
// fetch stage and read by the parse stage, on the parse ceiling's 25 KB pages: CPU per
// response (encode plus decode), the bytes stored (b/resp) and the share of the body
// they are (%body), for each compression setting, with and without a dictionary trained
// on other pages of the shop (the zstd levels; s2 and off take none). One op is one page.
func BenchmarkResponseTrip(b *testing.B) {
	res := ceilingResponses(b, 25000)
	d := trainShop(b)
	wire.RegisterDict(d)
	for _, c := range []string{wire.CompressOff, wire.CompressS2, wire.CompressFastest, wire.CompressDefault, wire.CompressBetter} {
		for _, withDict := range []bool{false, true} {
			if (c == wire.CompressOff || c == wire.CompressS2) && withDict {
				continue // neither takes a dictionary
			}
			dict := d
			if !withDict {
				dict = nil
			}
			b.Run(fmt.Sprintf("%s/dict=%v", c, withDict), func(b *testing.B) {
				b.ReportAllocs()
				stored, body := 0, 0
				cpu0 := processCPU()
				for i := 0; b.Loop(); i++ {
					r := res[i%len(res)]
					payload, err := wire.MarshalWith(r, c, dict)
					if err != nil {
						b.Fatal(err)
					}
					got, err := wire.UnmarshalLimit(payload, 10<<20)
					if err != nil || len(got.Body) != len(r.Body) {
						b.Fatalf("round trip: %v", err)
					}
					stored, body = stored+len(payload), body+len(r.Body)
				}
				b.ReportMetric(float64(processCPU()-cpu0)/1e3/float64(b.N), "cpu-µs/op")
				b.ReportMetric(float64(stored)/float64(b.N), "b/resp")
				b.ReportMetric(100*float64(stored)/float64(body), "%body")
			})
		}
	}
}

// BenchmarkZstdDecodeAll is the parse stage's decompression of a 25 KB page without
// the wire format around it, through a pooled streaming decoder as Unmarshal
// does and through DecodeAll into a buffer of the frame's size: what a copy costs.
func BenchmarkZstdDecodeAll(b *testing.B) {
	res := ceilingResponses(b, 25000)[1]
	plain, err := wire.Plain(res)
	if err != nil {
		b.Fatal(err)
	}
	enc, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest))
	payload := enc.EncodeAll(plain, nil)
	dec, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true), zstd.WithDecoderMaxWindow(16<<20))
	b.Run("DecodeAll", func(b *testing.B) {
		b.ReportAllocs()
		cpu0 := processCPU()
		for b.Loop() {
			out, err := dec.DecodeAll(payload, make([]byte, 0, len(plain)))
			if err != nil || len(out) != len(plain) {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(processCPU()-cpu0)/1e3/float64(b.N), "cpu-µs/op")
	})
	b.Run("Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		cpu0 := processCPU()
		for b.Loop() {
			if _, err := wire.UnmarshalLimit(payload, 10<<20); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(processCPU()-cpu0)/1e3/float64(b.N), "cpu-µs/op")
	})
}
