package spiders

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/klauspost/compress/zstd"
)

// ResponseVersion is the version of the response wire format written by this build.
const ResponseVersion = 1

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
	BodyLen   int         `json:"body_len"`
	Truncated bool        `json:"truncated,omitempty"`
	FetchedAt time.Time   `json:"fetched_at"`
}

// MarshalResponse encodes r with its body compressed.
func MarshalResponse(r *Response) ([]byte, error) {
	w := responseWire{
		V: ResponseVersion, Request: r.Request, URL: r.URL, Status: r.Status,
		Headers: r.Headers, BodyLen: len(r.Body), Truncated: r.Truncated, FetchedAt: r.FetchedAt,
	}
	if len(r.Body) > 0 {
		w.Encoding = "zstd"
		w.Body = zstdEncoder.EncodeAll(r.Body, make([]byte, 0, len(r.Body)/3+64))
	}
	return json.Marshal(w)
}

// UnmarshalResponse decodes a response written by MarshalResponse.
func UnmarshalResponse(b []byte) (*Response, error) {
	var w responseWire
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("spiders: decode response: %w", err)
	}
	if w.V != ResponseVersion {
		return nil, fmt.Errorf("spiders: response version %d not supported (want %d)", w.V, ResponseVersion)
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
		Truncated: w.Truncated, FetchedAt: w.FetchedAt}
	if r.Headers == nil {
		r.Headers = http.Header{}
	}
	switch w.Encoding {
	case "":
		r.Body = w.Body
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
