package wire_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/streamcrawl/streamcrawl/handlers/internal/wire"
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
	wire.RegisterDict(d)
	res := shopResponses(t, 7000, 8)
	var stored [][]byte
	size := map[string]int{}
	body := 0
	for _, r := range res {
		body += len(r.Body)
	}
	for _, c := range []string{"", wire.CompressS2, wire.CompressFastest, wire.CompressDefault, wire.CompressBetter, wire.CompressOff} {
		for _, dict := range []*wire.Dict{nil, d} {
			name := fmt.Sprintf("%q dict=%v", c, dict != nil)
			for _, r := range res {
				payload, err := wire.MarshalWith(r, c, dict)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				wantID := uint32(0)
				if dict != nil && c != wire.CompressOff && c != wire.CompressS2 {
					wantID = d.ID()
				}
				if got := wire.DictID(payload); got != wantID {
					t.Fatalf("%s: frame names dictionary %d, want %d", name, got, wantID)
				}
				if compressed := wire.Compressed(payload); compressed == (c == wire.CompressOff) {
					t.Fatalf("%s: compressed %v", name, compressed)
				}
				wantEnc := wire.EncodingZstd
				switch c {
				case wire.CompressS2:
					wantEnc = wire.EncodingS2
				case wire.CompressOff:
					wantEnc = ""
				}
				if c != "" && wire.Encoding(payload) != wantEnc {
					t.Fatalf("%s: content encoding %q, want %q", name, wire.Encoding(payload), wantEnc)
				}
				size[name] += len(payload)
				stored = append(stored, payload)
			}
		}
	}
	// Every entry decodes in one process, in the order a stream would hold them.
	for i, payload := range stored {
		r := res[i%len(res)]
		got, err := wire.UnmarshalLimit(payload, 1<<20)
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		if !bytes.Equal(got.Body, r.Body) || got.URL != r.URL || got.Request.URL != r.Request.URL || got.Status != r.Status {
			t.Fatalf("entry %d: round trip changed the response", i)
		}
	}
	off := size[fmt.Sprintf("%q dict=false", wire.CompressOff)]
	if off < body || off > body+body/5 {
		t.Fatalf("compression off: %d bytes stored for %d of bodies, want the bodies and a small head", off, body)
	}
	for _, c := range []string{wire.CompressFastest, wire.CompressDefault, wire.CompressBetter} {
		if n := size[fmt.Sprintf("%q dict=false", c)]; n*2 > body {
			t.Fatalf("%s: %d bytes stored for %d of bodies, want under half", c, n, body)
		}
	}
	if s2 := size[fmt.Sprintf("%q dict=false", wire.CompressS2)]; s2*10 > body*6 {
		t.Fatalf("s2: %d bytes stored for %d of bodies, want under 60%%", s2, body)
	}
	if _, err := wire.MarshalWith(res[0], "fast", nil); err == nil {
		t.Fatal("compression \"fast\" accepted")
	}
	t.Logf("8 product pages, %d bytes of bodies: stored %v", body, size)
}
