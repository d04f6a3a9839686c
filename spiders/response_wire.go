package spiders

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
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

var zstdEncoder, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))

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

// MarshalResponse encodes r (version 2: compressed JSON). The body is written into the
// JSON by hand (escaped text, or base64), so a 10 MB page costs one buffer of its JSON
// on top of the body, not the several growing copies encoding/json would make.
func MarshalResponse(r *Response) ([]byte, error) { return MarshalResponseDict(r, nil) }

// MarshalResponseDict is MarshalResponse compressing with the dictionary d (nil: none).
// The zstd frame names d's ID: decoding needs d registered (RegisterResponseDict).
func MarshalResponseDict(r *Response, d *ResponseDict) ([]byte, error) {
	buf := jsonBuffers.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= 1<<20 {
			buf.Reset()
			jsonBuffers.Put(buf)
		}
	}()
	if err := writeResponseJSON(buf, r); err != nil {
		return nil, err
	}
	enc := zstdEncoder
	if d != nil {
		enc = d.enc
	}
	return enc.EncodeAll(buf.Bytes(), make([]byte, 0, buf.Len()/3+64)), nil
}

// ResponseJSON returns the JSON of r before compression (what a dictionary is trained on).
func ResponseJSON(r *Response) ([]byte, error) {
	var buf bytes.Buffer
	if err := writeResponseJSON(&buf, r); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeResponseJSON writes the JSON of r (version 2, uncompressed) to buf.
func writeResponseJSON(buf *bytes.Buffer, r *Response) error {
	w := responseWire{
		V: ResponseVersion, Request: r.Request, URL: r.URL, Status: r.Status,
		Headers: r.Headers, BodyLen: len(r.Body), Truncated: r.Truncated, FetchedAt: r.FetchedAt,
		Charset: r.Charset,
	}
	head, err := json.Marshal(w) // everything but the body
	if err != nil {
		return fmt.Errorf("spiders: encode response: %w", err)
	}
	text := utf8.Valid(r.Body)
	size := len(head) + 16 + base64.StdEncoding.EncodedLen(len(r.Body))
	if text {
		size = len(head) + 16 + jsonTextLen(r.Body)
	}
	buf.Grow(size)
	buf.Write(head[:len(head)-1]) // without its closing brace
	if text {
		buf.WriteString(`,"text":"`)
		writeJSONText(buf, r.Body)
	} else {
		buf.WriteString(`,"body":"`)
		enc := base64.NewEncoder(base64.StdEncoding, buf)
		enc.Write(r.Body)
		enc.Close()
	}
	buf.WriteString(`"}`)
	return nil
}

// jsonTextLen is the length of b escaped by writeJSONText.
func jsonTextLen(b []byte) int {
	n := len(b)
	for _, c := range b {
		switch {
		case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
			n++
		case c < 0x20:
			n += 5
		}
	}
	return n
}

// writeJSONText writes valid UTF-8 text as the inside of a JSON string.
func writeJSONText(buf *bytes.Buffer, b []byte) {
	const hex = "0123456789abcdef"
	start := 0
	for i, c := range b {
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		buf.Write(b[start:i])
		switch c {
		case '"', '\\':
			buf.WriteByte('\\')
			buf.WriteByte(c)
		case '\n':
			buf.WriteString(`\n`)
		case '\r':
			buf.WriteString(`\r`)
		case '\t':
			buf.WriteString(`\t`)
		default:
			buf.WriteString(`\u00`)
			buf.WriteByte(hex[c>>4])
			buf.WriteByte(hex[c&0xf])
		}
		start = i + 1
	}
	buf.Write(b[start:])
}

// jsonBuffers pools the buffers responses are encoded in (up to 1 MB each).
var jsonBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// UnmarshalResponse decodes a response written by MarshalResponse (either version),
// with bodies up to MaxDecodedBody. Stages use UnmarshalResponseLimit.
func UnmarshalResponse(b []byte) (*Response, error) { return UnmarshalResponseLimit(b, MaxDecodedBody) }

// ErrBodyTooLarge is returned for a stored response whose body decodes to more than the
// limit asked for: a forged or foreign entry, never one this build's fetcher wrote
// under the same max_body_size.
var ErrBodyTooLarge = errors.New("spiders: stored response larger than max_body_size")

// UnmarshalResponseLimit is UnmarshalResponse for bodies of at most maxBody bytes (the
// spider's max_body_size). It stops decompressing as soon as the output passes what a
// body of that size can take in the wire format, so a small forged entry that expands
// to gigabytes costs at most about twice maxBody of memory.
func UnmarshalResponseLimit(b []byte, maxBody int64) (*Response, error) {
	if maxBody <= 0 || maxBody > MaxDecodedBody {
		maxBody = MaxDecodedBody
	}
	if bytes.HasPrefix(b, zstdMagic) {
		// JSON escaping and base64 take a body to at most twice its size, plus the
		// request, URL and headers.
		plain, err := decodeLimited(b, 2*maxBody+1<<20)
		if err != nil {
			return nil, err
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
	if w.BodyLen < 0 || int64(w.BodyLen) > maxBody {
		return nil, fmt.Errorf("%w: body length %d, limit %d", ErrBodyTooLarge, w.BodyLen, maxBody)
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
		body, err := decodeLimited(w.Body, maxBody)
		if err != nil {
			return nil, fmt.Errorf("spiders: body of %s: %w", w.URL, err)
		}
		r.Body = body
	default:
		return nil, fmt.Errorf("spiders: unknown body encoding %q", w.Encoding)
	}
	if int64(len(r.Body)) > maxBody {
		return nil, fmt.Errorf("%w: body of %d bytes, limit %d", ErrBodyTooLarge, len(r.Body), maxBody)
	}
	return r, nil
}

// limitedDecoders are streaming zstd decoders (one goroutine each): a stream can be
// stopped at a size limit, where DecodeAll would expand the whole frame first.
var limitedDecoders = sync.Pool{New: func() any {
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxWindow(16<<20)) // our encoder's window is 8 MB
	if err != nil {
		panic(err) // only for invalid options
	}
	return d
}}

// decodeLimited decompresses the zstd data b, failing with ErrBodyTooLarge once the
// output passes limit bytes.
func decodeLimited(b []byte, limit int64) ([]byte, error) {
	pool, err := decodersFor(b)
	if err != nil {
		return nil, err
	}
	d := pool.Get().(*zstd.Decoder)
	defer pool.Put(d)
	if err := d.Reset(bytes.NewReader(b)); err != nil {
		return nil, fmt.Errorf("spiders: decompress response: %w", err)
	}
	defer d.Reset(nil) //nolint:errcheck // drops the reference to b
	// Read in growing chunks and join once at the end: growing one buffer by doubling
	// would allocate about twice the limit before a bomb is caught.
	r := io.LimitReader(d, limit+1)
	size := min(max(int64(len(b))*8, 4<<10), 1<<20, limit+1)
	var chunks [][]byte
	var total int64
	for {
		buf := make([]byte, size)
		n, err := io.ReadFull(r, buf)
		chunks = append(chunks, buf[:n])
		total += int64(n)
		if total > limit {
			return nil, fmt.Errorf("%w: decompresses past %d bytes", ErrBodyTooLarge, limit)
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("spiders: decompress response: %w", err)
		}
		size = min(size*2, 8<<20)
	}
	if len(chunks) == 1 {
		return chunks[0], nil
	}
	out := make([]byte, 0, total)
	for _, c := range chunks {
		out = append(out, c...)
	}
	return out, nil
}
