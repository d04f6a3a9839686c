package spiders

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/klauspost/compress/zstd"
)

// ResponseVersion is the version of the response wire format written by this build.
//
// Version 2 is a JSON object whose body is a string ("text") when it is UTF-8 (HTML,
// XML, JSON pages) or base64 ("body") otherwise, the whole payload compressed with zstd
// (it starts with the zstd magic number, and the message metadata says
// content_encoding=zstd). Version 1, still read, kept the JSON plain and compressed the
// body alone, base64 inside the JSON: a third larger in Redis.
const ResponseVersion = 2

// ResponseEncodingZstd is the content_encoding metadata of a compressed response payload.
const ResponseEncodingZstd = "zstd"

// zstdMagic starts every zstd frame; JSON never starts with it.
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// MaxDecodedBody bounds what UnmarshalResponse will decompress, whatever a message claims.
const MaxDecodedBody = 256 << 20

var (
	zstdEncoder, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	zstdDecoder, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(MaxDecodedBody))
)

// responseWire is a Response on a stream: versioned JSON with a zstd-compressed body.
type responseWire struct {
	V         int         `json:"v"`
	Request   *Request    `json:"request"`
	URL       string      `json:"url"`
	Status    int         `json:"status"`
	Headers   http.Header `json:"headers,omitempty"`
	Encoding  string      `json:"body_encoding,omitempty"`
	Body      []byte      `json:"body,omitempty"`
	Text      *string     `json:"text,omitempty"`
	BodyLen   int         `json:"body_len"`
	Truncated bool        `json:"truncated,omitempty"`
	Charset   string      `json:"charset,omitempty"`
	FetchedAt time.Time   `json:"fetched_at"`
}

// MarshalResponse encodes r (version 2: compressed JSON).
func MarshalResponse(r *Response) ([]byte, error) {
	w := responseWire{
		V: ResponseVersion, Request: r.Request, URL: r.URL, Status: r.Status,
		Headers: r.Headers, BodyLen: len(r.Body), Truncated: r.Truncated, FetchedAt: r.FetchedAt,
		Charset: r.Charset,
	}
	if utf8.Valid(r.Body) {
		text := string(r.Body)
		w.Text = &text
	} else {
		w.Body = r.Body
	}
	var buf bytes.Buffer
	buf.Grow(len(r.Body) + 512)
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(w); err != nil {
		return nil, fmt.Errorf("spiders: encode response: %w", err)
	}
	return zstdEncoder.EncodeAll(buf.Bytes(), make([]byte, 0, buf.Len()/3+64)), nil
}

// UnmarshalResponse decodes a response written by MarshalResponse (either version).
func UnmarshalResponse(b []byte) (*Response, error) {
	if bytes.HasPrefix(b, zstdMagic) {
		plain, err := zstdDecoder.DecodeAll(b, nil)
		if err != nil {
			return nil, fmt.Errorf("spiders: decompress response: %w", err)
		}
		b = plain
	}
	var w responseWire
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("spiders: decode response: %w", err)
	}
	if w.V != 1 && w.V != ResponseVersion {
		return nil, fmt.Errorf("spiders: response version %d not supported (want 1 or %d)", w.V, ResponseVersion)
	}
	if w.Request == nil {
		return nil, fmt.Errorf("spiders: response for %q has no request", w.URL)
	}
	if err := w.Request.Validate(); err != nil {
		return nil, err
	}
	if w.BodyLen < 0 || w.BodyLen > MaxDecodedBody {
		return nil, fmt.Errorf("spiders: response body length %d out of range", w.BodyLen)
	}
	r := &Response{Request: w.Request, URL: w.URL, Status: w.Status, Headers: w.Headers,
		Truncated: w.Truncated, FetchedAt: w.FetchedAt, Charset: w.Charset}
	if r.Headers == nil {
		r.Headers = http.Header{}
	}
	switch w.Encoding {
	case "":
		r.Body = w.Body
		if w.Text != nil {
			r.Body = []byte(*w.Text)
		}
	case "zstd":
		body, err := zstdDecoder.DecodeAll(w.Body, make([]byte, 0, w.BodyLen))
		if err != nil {
			return nil, fmt.Errorf("spiders: decompress body of %s: %w", w.URL, err)
		}
		r.Body = body
	default:
		return nil, fmt.Errorf("spiders: unknown body encoding %q", w.Encoding)
	}
	return r, nil
}
