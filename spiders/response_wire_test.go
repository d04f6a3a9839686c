package spiders

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

func TestResponseWireRoundTrip(t *testing.T) {
	req := &Request{URL: "http://example.com/p/1", Meta: map[string]any{"k": "v"}, Depth: 2}
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	for name, body := range map[string][]byte{
		"html":   []byte(`<html><body><a href="/x?a=1&b=2">“quoted” <b>&amp;</b></a></body></html>`),
		"binary": {0x89, 'P', 'N', 'G', 0xff, 0x00, 0xfe},
		"empty":  nil,
	} {
		t.Run(name, func(t *testing.T) {
			in := &Response{Request: req, URL: "http://example.com/p/1?x", Status: 200,
				Headers: http.Header{"Content-Type": {"text/html"}}, Body: body, Truncated: true, FetchedAt: at}
			b, err := MarshalResponse(in)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(b, zstdMagic) {
				t.Fatal("payload is not zstd-compressed")
			}
			out, err := UnmarshalResponse(b)
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
	out, err := UnmarshalResponse(v1)
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
		if _, err := UnmarshalResponse(b); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestResponseWireKeepsTheCharset(t *testing.T) {
	in := &Response{Request: &Request{URL: "http://example.com/"}, URL: "http://example.com/", Status: 200,
		Headers: http.Header{"Content-Type": {"text/html; charset=shift_jis"}}, Body: []byte("<p>日本</p>"), Charset: "shift_jis"}
	b, err := MarshalResponse(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := UnmarshalResponse(b)
	if err != nil {
		t.Fatal(err)
	}
	if out.Charset != "shift_jis" || string(out.Body) != "<p>日本</p>" {
		t.Fatalf("round trip: charset %q body %q", out.Charset, out.Body)
	}
	// A response from a build that did not decode has no charset: Doc decodes it.
	old := &Response{Request: in.Request, URL: in.URL, Status: 200, Headers: in.Headers, Body: []byte("<p>\x93\xfa\x96\x7b</p>")}
	doc, err := old.Doc()
	if err != nil {
		t.Fatal(err)
	}
	if got := doc.Find("p").Text(); got != "日本" {
		t.Fatalf("old response read as %q, want 日本", got)
	}
}
