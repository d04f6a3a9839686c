package spiders_test

import (
	"fmt"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/streamcrawl/streamcrawl/spiders"
)

// ceilingResponses are the parse ceiling's pages at pageSize as fetched responses.
func ceilingResponses(b *testing.B, pageSize int) []*spiders.Response {
	b.Helper()
	urls, bodies := ceilingPages(b, pageSize)
	out := make([]*spiders.Response, len(bodies))
	for i, u := range urls {
		out[i] = &spiders.Response{Request: &spiders.Request{URL: u.String(), Depth: 2}, URL: u.String(), Status: 200,
			Headers: http.Header{"Content-Type": {"text/html; charset=utf-8"}, "Date": {"Fri, 27 Nov 2026 02:00:00 GMT"}},
			Body:    bodies[i], FetchedAt: time.Date(2026, 11, 27, 2, 0, 0, 0, time.UTC)}
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
	spiders.RegisterResponseDict(d)
	for _, c := range []string{spiders.ResponseCompressOff, spiders.ResponseCompressS2, spiders.ResponseCompressFastest, spiders.ResponseCompressDefault, spiders.ResponseCompressBetter} {
		for _, withDict := range []bool{false, true} {
			if (c == spiders.ResponseCompressOff || c == spiders.ResponseCompressS2) && withDict {
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
					wire, err := spiders.MarshalResponseWith(r, c, dict)
					if err != nil {
						b.Fatal(err)
					}
					got, err := spiders.UnmarshalResponseLimit(wire, 10<<20)
					if err != nil || len(got.Body) != len(r.Body) {
						b.Fatalf("round trip: %v", err)
					}
					stored, body = stored+len(wire), body+len(r.Body)
				}
				b.ReportMetric(float64(processCPU()-cpu0)/1e3/float64(b.N), "cpu-µs/op")
				b.ReportMetric(float64(stored)/float64(b.N), "b/resp")
				b.ReportMetric(100*float64(stored)/float64(body), "%body")
			})
		}
	}
}

// BenchmarkZstdDecodeAll is the parse stage's decompression of a 25 KB page without
// the wire format around it, through a pooled streaming decoder as UnmarshalResponse
// does and through DecodeAll into a buffer of the frame's size: what a copy costs.
func BenchmarkZstdDecodeAll(b *testing.B) {
	res := ceilingResponses(b, 25000)[1]
	plain, err := spiders.ResponsePlain(res)
	if err != nil {
		b.Fatal(err)
	}
	enc, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest))
	wire := enc.EncodeAll(plain, nil)
	dec, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true), zstd.WithDecoderMaxWindow(16<<20))
	b.Run("DecodeAll", func(b *testing.B) {
		b.ReportAllocs()
		cpu0 := processCPU()
		for b.Loop() {
			out, err := dec.DecodeAll(wire, make([]byte, 0, len(plain)))
			if err != nil || len(out) != len(plain) {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(processCPU()-cpu0)/1e3/float64(b.N), "cpu-µs/op")
	})
	b.Run("UnmarshalResponse", func(b *testing.B) {
		b.ReportAllocs()
		cpu0 := processCPU()
		for b.Loop() {
			if _, err := spiders.UnmarshalResponseLimit(wire, 10<<20); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(processCPU()-cpu0)/1e3/float64(b.N), "cpu-µs/op")
	})
}

// BenchmarkParseCeilingCPU is BenchmarkParseCeiling's 25 KB pages with the CPU time per
// page (cpu-µs/op) beside the wall time: on a machine loaded by other work, wall time
// counts the waits for a core too, and the bench command's worker figure is CPU time.
func BenchmarkParseCeilingCPU(b *testing.B) {
	urls, bodies := ceilingPages(b, 25000)
	var links []string
	b.ReportAllocs()
	cpu0 := processCPU()
	for i := 0; b.Loop(); i++ {
		var err error
		if links, _, err = parseCeiling(urls[i%len(urls)], bodies[i%len(bodies)], links[:0]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(processCPU()-cpu0)/1e3/float64(b.N), "cpu-µs/op")
}
