package spiders_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/streamcrawl/streamcrawl/spiders"
)

// Whatever compression setting wrote a response (S2, or any zstd level with or without
// a dictionary, or none), a process decodes it, whatever its own setting: a stream keeps
// entries written before a setting changed. A compressed response is a zstd frame
// naming its dictionary or an S2 block; one written with compression off is the plain version
// 3 content, about the body's size; the zstd levels take the shop's pages under half of
// it, S2 under 60% (S2 takes no dictionary).
func TestResponseWireEveryCompressionDecodes(t *testing.T) {
	t.Parallel()
	d := trainShop(t)
	spiders.RegisterResponseDict(d)
	res := shopResponses(t, 7000, 8)
	var stored [][]byte
	size := map[string]int{}
	body := 0
	for _, r := range res {
		body += len(r.Body)
	}
	for _, c := range []string{"", spiders.ResponseCompressS2, spiders.ResponseCompressFastest, spiders.ResponseCompressDefault, spiders.ResponseCompressBetter, spiders.ResponseCompressOff} {
		for _, dict := range []*spiders.ResponseDict{nil, d} {
			name := fmt.Sprintf("%q dict=%v", c, dict != nil)
			for _, r := range res {
				wire, err := spiders.MarshalResponseWith(r, c, dict)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				wantID := uint32(0)
				if dict != nil && c != spiders.ResponseCompressOff && c != spiders.ResponseCompressS2 {
					wantID = d.ID()
				}
				if got := spiders.ResponseDictID(wire); got != wantID {
					t.Fatalf("%s: frame names dictionary %d, want %d", name, got, wantID)
				}
				if compressed := spiders.ResponseCompressed(wire); compressed == (c == spiders.ResponseCompressOff) {
					t.Fatalf("%s: compressed %v", name, compressed)
				}
				wantEnc := spiders.ResponseEncodingZstd
				switch c {
				case spiders.ResponseCompressS2:
					wantEnc = spiders.ResponseEncodingS2
				case spiders.ResponseCompressOff:
					wantEnc = ""
				}
				if c != "" && spiders.ResponseEncoding(wire) != wantEnc {
					t.Fatalf("%s: content encoding %q, want %q", name, spiders.ResponseEncoding(wire), wantEnc)
				}
				size[name] += len(wire)
				stored = append(stored, wire)
			}
		}
	}
	// Every entry decodes in one process, in the order a stream would hold them.
	for i, wire := range stored {
		r := res[i%len(res)]
		got, err := spiders.UnmarshalResponseLimit(wire, 1<<20)
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		if !bytes.Equal(got.Body, r.Body) || got.URL != r.URL || got.Request.URL != r.Request.URL || got.Status != r.Status {
			t.Fatalf("entry %d: round trip changed the response", i)
		}
	}
	off := size[fmt.Sprintf("%q dict=false", spiders.ResponseCompressOff)]
	if off < body || off > body+body/5 {
		t.Fatalf("compression off: %d bytes stored for %d of bodies, want the bodies and a small head", off, body)
	}
	for _, c := range []string{spiders.ResponseCompressFastest, spiders.ResponseCompressDefault, spiders.ResponseCompressBetter} {
		if n := size[fmt.Sprintf("%q dict=false", c)]; n*2 > body {
			t.Fatalf("%s: %d bytes stored for %d of bodies, want under half", c, n, body)
		}
	}
	if s2 := size[fmt.Sprintf("%q dict=false", spiders.ResponseCompressS2)]; s2*10 > body*6 {
		t.Fatalf("s2: %d bytes stored for %d of bodies, want under 60%%", s2, body)
	}
	if _, err := spiders.MarshalResponseWith(res[0], "fast", nil); err == nil {
		t.Fatal("compression \"fast\" accepted")
	}
	t.Logf("8 product pages, %d bytes of bodies: stored %v", body, size)
}

// settings.response_compression takes the five values and "".
func TestResponseCompressionSetting(t *testing.T) {
	t.Parallel()
	for c, ok := range map[string]bool{"": true, "s2": true, "fastest": true, "default": true, "better": true, "off": true, "fast": false, "9": false} {
		s := spiders.Settings{ResponseCompression: c}
		s.SetDefaults()
		if err := s.Validate(); (err == nil) != ok {
			t.Fatalf("response_compression %q: %v, want valid %v", c, err, ok)
		}
	}
}
