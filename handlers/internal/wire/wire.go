package wire

import (
	"bytes"
	"net/http"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders"
)

// Version is the version of the response wire format written by this build.
//
// Version 3 is one zstd frame (it starts with the zstd magic number, and the message
// metadata says content_encoding=zstd) holding the 4-byte marker "SCR\x03", the length
// of a JSON head as a uvarint, the head (request, URL, status, headers, body length,
// ...: everything but the body), then the body as it came, unescaped. Writing it costs
// one copy of the body and reading it one buffer of the frame's known size, with the
// body a slice of it: no escaping, no base64, no UTF-8 check. The same content is stored
// as one S2 block after its own marker with response_compression: s2, and as it is
// (starting with the marker) with off.
//
// Older versions are still read: version 2 was the whole response as JSON (the body a
// JSON string, or base64 when it was not UTF-8) compressed with zstd; version 1 kept the
// JSON plain and compressed the body alone.
const Version = 3

// EncodingZstd is the content_encoding metadata of a response payload compressed
// with zstd (a response stored with compression off has none).
const EncodingZstd = "zstd"

// EncodingS2 is the content_encoding metadata of a response payload compressed
// with S2 (response_compression: s2).
const EncodingS2 = "s2"

// zstdMagic starts every zstd frame; JSON never starts with it.
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// s2Magic starts a response compressed with S2: the marker, then one S2 block (its
// decoded length first, as a uvarint) of the version 3 content. Neither a zstd frame,
// the version 3 marker nor JSON starts with it.
var s2Magic = []byte("SCS\x03")

// Compressed reports whether the stored response payload is compressed (a zstd
// frame or an S2 block; not one written with compression off).
func Compressed(payload []byte) bool { return Encoding(payload) != "" }

// Encoding is the content_encoding of the stored response payload:
// EncodingZstd, EncodingS2, or "" for one stored with compression off.
func Encoding(payload []byte) string {
	switch {
	case bytes.HasPrefix(payload, zstdMagic):
		return EncodingZstd
	case bytes.HasPrefix(payload, s2Magic):
		return EncodingS2
	}
	return ""
}

// v3Marker starts the decompressed content of a version 3 response.
var v3Marker = []byte("SCR\x03")

// MaxDecodedBody bounds what Unmarshal will decompress, whatever a message claims.
const MaxDecodedBody = 256 << 20

// maxHead bounds a version 3 response's JSON head (request, URL, headers).
const maxHead = 1 << 20

// MaxHeaderBytes is the most bytes of response headers a fetcher reads (net/http's
// MaxResponseHeaderBytes): what a response's head may hold.
const MaxHeaderBytes = maxHead

// responseHead is a version 3 response on a stream, but its body.
type responseHead struct {
	V         int              `json:"v"`
	Request   *spiders.Request `json:"request"`
	URL       string           `json:"url"`
	Status    int              `json:"status"`
	Headers   http.Header      `json:"headers,omitempty"`
	BodyLen   int              `json:"body_len"`
	Truncated bool             `json:"truncated,omitempty"`
	Charset   string           `json:"charset,omitempty"`
	FetchedAt time.Time        `json:"fetched_at"`
	Rendered  string           `json:"rendered,omitempty"`
}
