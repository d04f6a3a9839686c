package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/streamcrawl/streamcrawl/spiders"
)

func TestResponseWireRoundTrip(t *testing.T) {
	req := &spiders.Request{URL: "http://example.com/p/1", Meta: map[string]any{"k": "v"}, Depth: 2}
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	for name, body := range map[string][]byte{
		"html":   []byte(`<html><body><a href="/x?a=1&b=2">“quoted” <b>&amp;</b></a></body></html>`),
		"binary": {0x89, 'P', 'N', 'G', 0xff, 0x00, 0xfe},
		"empty":  nil,
	} {
		t.Run(name, func(t *testing.T) {
			in := &spiders.Response{Request: req, URL: "http://example.com/p/1?x", Status: 200,
				Headers: http.Header{"Content-Type": {"text/html"}}, Body: body, Truncated: true, FetchedAt: at}
			b, err := Marshal(in)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(b, zstdMagic) {
				t.Fatal("payload is not zstd-compressed")
			}
			out, err := Unmarshal(b)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out.Body, body) || out.URL != in.URL || out.Status != 200 || !out.Truncated ||
				!out.FetchedAt.Equal(at) || out.Request.Depth != 2 || out.Request.Meta["k"] != "v" {
				t.Fatalf("round trip (-want +got):\n-%+v\n+%+v", in, out)
			}
		})
	}
}

func TestResponseWireReadsVersion1(t *testing.T) {
	body := []byte("<html>v1</html>")
	v1, _ := json.Marshal(map[string]any{"v": 1, "request": map[string]any{"url": "http://example.com/"},
		"url": "http://example.com/", "status": 200, "body_encoding": "zstd",
		"body": zstdEncoder.EncodeAll(body, nil), "body_len": len(body)})
	out, err := Unmarshal(v1)
	if err != nil {
		t.Fatal(err)
	}
	if string(out.Body) != string(body) {
		t.Fatalf("body = %q, want %q", out.Body, body)
	}
}

func TestResponseWireRejectsGarbage(t *testing.T) {
	for name, b := range map[string][]byte{
		"not json":        []byte("{nope"),
		"bad zstd":        append(append([]byte{}, zstdMagic...), 1, 2, 3),
		"unknown version": []byte(`{"v":9,"request":{"url":"http://e.com/"}}`),
		"no request":      []byte(`{"v":2,"url":"http://e.com/"}`),
	} {
		if _, err := Unmarshal(b); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestResponseWireKeepsTheCharset(t *testing.T) {
	in := &spiders.Response{Request: &spiders.Request{URL: "http://example.com/"}, URL: "http://example.com/", Status: 200,
		Headers: http.Header{"Content-Type": {"text/html; charset=shift_jis"}}, Body: []byte("<p>日本</p>"), Charset: "shift_jis"}
	b, err := Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if out.Charset != "shift_jis" || string(out.Body) != "<p>日本</p>" {
		t.Fatalf("round trip: charset %q body %q", out.Charset, out.Body)
	}
	// A response from a build that did not decode has no charset: Doc decodes it.
	old := &spiders.Response{Request: in.Request, URL: in.URL, Status: 200, Headers: in.Headers, Body: []byte("<p>\x93\xfa\x96\x7b</p>")}
	doc, err := old.Doc()
	if err != nil {
		t.Fatal(err)
	}
	if got := doc.Find("p").Text(); got != "日本" {
		t.Fatalf("old response read as %q, want 日本", got)
	}
}

func TestResponseWireReadsVersion2(t *testing.T) {
	in := &spiders.Response{Request: &spiders.Request{URL: "http://example.com/"}, URL: "http://example.com/", Status: 200,
		Headers: http.Header{"X": {"y"}}, Body: []byte("<p>\"v2\"\n</p>")}
	for name, body := range map[string][]byte{"text": in.Body, "binary": {0xff, 0, 0xfe}} {
		in.Body = body
		var buf bytes.Buffer
		if err := writeJSON(&buf, in); err != nil {
			t.Fatal(err)
		}
		out, err := Unmarshal(zstdEncoder.EncodeAll(buf.Bytes(), nil))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(out.Body, body) || out.Headers.Get("X") != "y" {
			t.Fatalf("%s: read %q %v", name, out.Body, out.Headers)
		}
	}
}

// A frame without its content size in the header (a streaming writer's) is read in
// bounded chunks, and still refused past the limit.
func TestResponseWireFrameWithoutSize(t *testing.T) {
	in := &spiders.Response{Request: &spiders.Request{URL: "http://example.com/"}, URL: "http://example.com/", Status: 200,
		Body: bytes.Repeat([]byte("<p>x</p>"), 100000)}
	plain, err := Plain(in)
	if err != nil {
		t.Fatal(err)
	}
	var frame bytes.Buffer
	w, _ := zstd.NewWriter(&frame)
	w.Write(plain[:len(plain)/2])
	w.Flush()
	w.Write(plain[len(plain)/2:])
	w.Close()
	var h zstd.Header
	if err := h.Decode(frame.Bytes()); err != nil || h.HasFCS {
		t.Fatalf("test frame has a size in its header (%v): it tests nothing", err)
	}
	out, err := Unmarshal(frame.Bytes())
	if err != nil || !bytes.Equal(out.Body, in.Body) {
		t.Fatalf("read %d bytes, %v", len(out.Body), err)
	}
	if _, err := UnmarshalLimit(frame.Bytes(), 100); !errors.Is(err, ErrBodyTooLarge) {
		t.Fatalf("limit 100: %v, want ErrBodyTooLarge", err)
	}
}

// A stored response whose frame says it holds more than a body of max_body_size can
// take is refused before anything is decompressed; one whose head disagrees with its
// body is refused too.
func TestResponseWireRefusesBadSizes(t *testing.T) {
	in := &spiders.Response{Request: &spiders.Request{URL: "http://example.com/"}, URL: "http://example.com/", Status: 200,
		Body: bytes.Repeat([]byte{'a'}, 10<<20)}
	b, err := Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 64<<10 {
		t.Fatalf("10 MB of one byte compressed to %d bytes", len(b))
	}
	if _, err := UnmarshalLimit(b, 1<<20); !errors.Is(err, ErrBodyTooLarge) {
		t.Fatalf("limit 1 MB: %v, want ErrBodyTooLarge", err)
	}
	plain, _ := Plain(&spiders.Response{Request: in.Request, URL: in.URL, Status: 200, Body: []byte("abc")})
	for name, p := range map[string][]byte{
		"short body":  plain[:len(plain)-1],
		"long body":   append(append([]byte{}, plain...), 'd'),
		"head length": append(append([]byte{}, v3Marker...), 0xff, 0xff, 0x7f),
	} {
		if _, err := Unmarshal(zstdEncoder.EncodeAll(p, nil)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestMarshalResponseReturnsTheEncoderError: a response encoder that could not be made
// is an error of Marshal (its error was dropped, and the first encode then
// panicked on the nil encoder).
func TestMarshalResponseReturnsTheEncoderError(t *testing.T) {
	enc, encErr := zstdEncoder, zstdEncoderErr
	defer func() { zstdEncoder, zstdEncoderErr = enc, encErr }()
	zstdEncoder, zstdEncoderErr = zstd.NewWriter(nil, zstd.WithWindowSize(3)) // not a power of two
	if zstdEncoderErr == nil {
		t.Fatal("an encoder with a window of 3 bytes was made: the test cannot make one fail")
	}
	res := &spiders.Response{Request: &spiders.Request{URL: "http://example.com/"}, URL: "http://example.com/", Status: 200, Body: []byte("<p>x</p>")}
	payload, err := Marshal(res)
	if err == nil || !errors.Is(err, zstdEncoderErr) || payload != nil {
		t.Fatalf("Marshal = %d bytes, %v; want no bytes and the encoder's error", len(payload), err)
	}
	if _, err := MarshalDict(res, nil); !errors.Is(err, zstdEncoderErr) {
		t.Fatalf("MarshalDict without a dictionary = %v; want the encoder's error", err)
	}
}

// TestResponseRenderedTravels keeps RenderedBy across the wire format.
func TestResponseRenderedTravels(t *testing.T) {
	r := &spiders.Response{Request: &spiders.Request{URL: "http://x/"}, URL: "http://x/", Status: 200, Headers: http.Header{},
		Body: []byte("<p>dom</p>"), RenderedBy: "HeadlessChrome/156.0.0.0"}
	b, err := Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Unmarshal(b)
	if err != nil || back.RenderedBy != r.RenderedBy {
		t.Errorf("rendered by %q, %v", back.RenderedBy, err)
	}
}
