package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"

	"github.com/streamcrawl/streamcrawl/spiders"
)

// forgedResponse returns a zstd-compressed response payload whose text body is size
// bytes of 'a': a few KB on the wire.
func forgedResponse(t testing.TB, size int) []byte {
	t.Helper()
	var out bytes.Buffer
	zw, err := zstd.NewWriter(&out, zstd.WithEncoderLevel(zstd.SpeedBestCompression))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = zw.Write([]byte(`{"v":2,"request":{"v":1,"url":"http://127.0.0.1/x","callback":"parse"},"url":"http://127.0.0.1/x","status":200,"body_len":0,"text":"`))
	chunk := []byte(strings.Repeat("a", 1<<20))
	for n := 0; n < size; n += len(chunk) {
		_, _ = zw.Write(chunk)
	}
	_, _ = zw.Write([]byte(`","fetched_at":"2026-01-01T00:00:00Z"}`))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// A small forged entry claiming nothing but expanding to 200 MB is refused after at
// most about twice max_body_size of output, not expanded.
func TestUnmarshalResponseLimitRefusesABomb(t *testing.T) {
	forged := forgedResponse(t, 200<<20)
	if len(forged) > 64<<10 {
		t.Fatalf("forged entry is %d bytes; want a small one", len(forged))
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := UnmarshalLimit(forged, 10<<20)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrBodyTooLarge) {
		t.Fatalf("err = %v, want ErrBodyTooLarge", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 100<<20 {
		t.Fatalf("decoding the %d-byte forged entry allocated %d MB; want well under its 200 MB", len(forged), alloc>>20)
	}
	t.Logf("forged %d-byte entry refused after %d MB allocated", len(forged), (after.TotalAlloc-before.TotalAlloc)>>20)
	// Within the limit it decodes.
	small := forgedResponse(t, 1<<20)
	r, err := UnmarshalLimit(small, 10<<20)
	if err != nil || len(r.Body) < 1<<20 {
		t.Fatalf("1 MB body under a 10 MB limit: %v", err)
	}
	if _, err := UnmarshalLimit(small, 512<<10); !errors.Is(err, ErrBodyTooLarge) {
		t.Fatalf("1 MB body under a 512 KB limit: err = %v, want ErrBodyTooLarge", err)
	}
}

// The hand-written JSON of Marshal decodes to the same body for every byte
// that needs escaping, for UTF-8 text and for binary bodies.
func TestMarshalResponseEscapesEveryByte(t *testing.T) {
	var ascii []byte
	for c := 0; c < 0x80; c++ {
		ascii = append(ascii, byte(c))
	}
	for name, body := range map[string][]byte{
		"ascii":  ascii,
		"utf8":   []byte("prix: 12 € \u2028 \"quoted\" \\ <a href='x'>&amp;</a> 😀"),
		"binary": {0xff, 0xfe, 0x00, '"', 0x80},
		"empty":  {},
	} {
		req := &spiders.Request{URL: "http://127.0.0.1/a?b=1&c=2", Callback: "parse"}
		payload, err := Marshal(&spiders.Response{Request: req, URL: req.URL, Status: 200, Body: body})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := Unmarshal(payload)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(got.Body, body) || got.URL != req.URL {
			t.Errorf("%s: round trip (-want +got):\n-%q %s\n+%q %s", name, body, req.URL, got.Body, got.URL)
		}
	}
}

// A frame followed by more zstd data (a second frame) decodes to more than the first
// frame's header says: it is refused, not read into a larger buffer.
func TestUnmarshalResponseRefusesDataPastTheFramesSize(t *testing.T) {
	r, err := spiders.NewRequest("http://127.0.0.1:8080/p/1", "")
	if err != nil {
		t.Fatal(err)
	}
	valid, err := Marshal(&spiders.Response{Request: r, URL: r.URL, Status: 200, Body: []byte("<html><body>ok</body></html>")})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := Unmarshal(valid); err != nil || string(got.Body) != "<html><body>ok</body></html>" {
		t.Fatalf("valid frame: %v, %v", got, err)
	}
	extra, err := Marshal(&spiders.Response{Request: r, URL: r.URL, Status: 200, Body: bytes.Repeat([]byte("x"), 100000)})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := Unmarshal(append(append([]byte(nil), valid...), extra...)); err == nil {
		t.Fatalf("two frames decoded as one response of %d body bytes; want an error", len(got.Body))
	}
}

// An S2 entry whose block claims a 200 MB content is refused before anything of that
// size is allocated; one that decodes to garbage or to content without the version 3
// marker is an error, not a response.
func TestUnmarshalResponseS2RefusesAForgedSize(t *testing.T) {
	t.Parallel()
	var claim [binary.MaxVarintLen64]byte
	forged := append(append([]byte(nil), s2Magic...), claim[:binary.PutUvarint(claim[:], 200<<20)]...)
	forged = append(forged, make([]byte, 64)...)
	if _, err := UnmarshalLimit(forged, 10<<20); !errors.Is(err, ErrBodyTooLarge) {
		t.Fatalf("S2 block claiming 200 MB: err = %v, want ErrBodyTooLarge", err)
	}
	for name, plain := range map[string][]byte{"truncated": nil, "no marker": []byte(`{"v":2}`)} {
		payload := append(append([]byte(nil), s2Magic...), s2.Encode(nil, []byte(`{"v":3,"padding":"aaaaaaaaaaaaaaaaaaaaaa"}`))...)
		if plain != nil {
			payload = append(append([]byte(nil), s2Magic...), s2.Encode(nil, plain)...)
		} else {
			payload = payload[:len(payload)-8]
		}
		if r, err := UnmarshalLimit(payload, 10<<20); err == nil {
			t.Fatalf("%s S2 entry decoded to %+v", name, r)
		}
	}
}
