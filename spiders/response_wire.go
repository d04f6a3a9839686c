package spiders

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// ResponseVersion is the version of the response wire format written by this build.
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
const ResponseVersion = 3

// ResponseEncodingZstd is the content_encoding metadata of a response payload compressed
// with zstd (a response stored with compression off has none).
const ResponseEncodingZstd = "zstd"

// ResponseEncodingS2 is the content_encoding metadata of a response payload compressed
// with S2 (response_compression: s2).
const ResponseEncodingS2 = "s2"

// zstdMagic starts every zstd frame; JSON never starts with it.
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// s2Magic starts a response compressed with S2: the marker, then one S2 block (its
// decoded length first, as a uvarint) of the version 3 content. Neither a zstd frame,
// the version 3 marker nor JSON starts with it.
var s2Magic = []byte("SCS\x03")

// ResponseCompressed reports whether the stored response payload is compressed (a zstd
// frame or an S2 block; not one written with compression off).
func ResponseCompressed(payload []byte) bool { return ResponseEncoding(payload) != "" }

// ResponseEncoding is the content_encoding of the stored response payload:
// ResponseEncodingZstd, ResponseEncodingS2, or "" for one stored with compression off.
func ResponseEncoding(payload []byte) string {
	switch {
	case bytes.HasPrefix(payload, zstdMagic):
		return ResponseEncodingZstd
	case bytes.HasPrefix(payload, s2Magic):
		return ResponseEncodingS2
	}
	return ""
}

// v3Marker starts the decompressed content of a version 3 response.
var v3Marker = []byte("SCR\x03")

// MaxDecodedBody bounds what UnmarshalResponse will decompress, whatever a message claims.
const MaxDecodedBody = 256 << 20

// maxResponseHead bounds a version 3 response's JSON head (request, URL, headers).
const maxResponseHead = 1 << 20

// MaxHeaderBytes is the most bytes of response headers a fetcher reads (net/http's
// MaxResponseHeaderBytes): what a response's head may hold.
const MaxHeaderBytes = maxResponseHead

// Values of Settings.ResponseCompression: the zstd level stored responses are written
// with, S2, or none. Whatever a process writes, it reads every one of them (a zstd
// response is a zstd frame, an S2 one starts with its own marker, one written plain
// with the version 3 marker).
const (
	ResponseCompressS2      = "s2"
	ResponseCompressFastest = "fastest"
	ResponseCompressDefault = "default"
	ResponseCompressBetter  = "better"
	ResponseCompressOff     = "off"
)

// DefaultResponseCompression is what MarshalResponse and MarshalResponseWith use for "",
// and the setting "" stands for when responses are retained (ResponseCompressionFor).
const DefaultResponseCompression = ResponseCompressFastest

// ResponseCompressionFor is the compression a fetch process stores responses with under
// the setting c: c itself when it is set. The default ("") depends on whether the crawl
// keeps responses once parsed (retained: settings.retention or --retain for responses):
// when it does, the bytes last and the default is fastest zstd with the crawl's
// dictionary (about 25% of a shop page); when it does not, a response lives in Redis only
// until it is parsed and the default is S2, which costs about half of fastest's CPU for
// about 1.8 times its bytes (measured on 25 KB shop pages, see the README).
func ResponseCompressionFor(c string, retained bool) string {
	switch {
	case c != "":
		return c
	case retained:
		return DefaultResponseCompression
	}
	return ResponseCompressS2
}

// ResponseCompressionUsesDict reports whether responses stored with the compression
// setting c ("" the default) use the crawl's dictionary (Settings.ResponseDict): the
// zstd levels do; S2 and off do not (S2's own dictionaries cost more to decode than
// they save on the shop's pages, see the README).
func ResponseCompressionUsesDict(c string) bool {
	_, zstdLevel, err := responseLevel(c)
	return err == nil && zstdLevel
}

// responseLevel is the zstd level of the setting c ("" the default); ok is false for
// off and for S2.
func responseLevel(c string) (level zstd.EncoderLevel, ok bool, err error) {
	if c == "" {
		c = DefaultResponseCompression
	}
	switch c {
	case ResponseCompressS2:
		return 0, false, nil
	case ResponseCompressFastest:
		return zstd.SpeedFastest, true, nil
	case ResponseCompressDefault:
		return zstd.SpeedDefault, true, nil
	case ResponseCompressBetter:
		return zstd.SpeedBetterCompression, true, nil
	case ResponseCompressOff:
		return 0, false, nil
	}
	return 0, false, fmt.Errorf("spiders: response compression %q: want s2, fastest, default, better or off", c)
}

// validResponseCompression reports whether c is a value of Settings.ResponseCompression.
func validResponseCompression(c string) bool {
	_, _, err := responseLevel(c)
	return err == nil
}

// encoderOptions are the options of every response encoder: the level, up to GOMAXPROCS
// encodes at once (EncodeAll is safe for concurrent use), and a 512 KB window: each
// concurrent encode keeps a history of its window, 8 MB by default, and a page's repeats
// are within a few KB.
func encoderOptions(level zstd.EncoderLevel, more ...zstd.EOption) []zstd.EOption {
	return append([]zstd.EOption{zstd.WithEncoderLevel(level), zstd.WithWindowSize(512 << 10),
		zstd.WithLowerEncoderMem(true)}, more...)
}

// zstdEncoder compresses responses at the default level without a dictionary;
// zstdEncoderErr says why it could not be made (MarshalResponse returns it).
var zstdEncoder, zstdEncoderErr = zstd.NewWriter(nil, encoderOptions(zstd.SpeedFastest)...)

// encoderKey names an encoder of the cache: a level and a dictionary (nil: none).
type encoderKey struct {
	level zstd.EncoderLevel
	dict  *ResponseDict
}

// cachedEncoder is an encoder of the cache, made once.
type cachedEncoder struct {
	once sync.Once
	enc  *zstd.Encoder
	err  error
}

// encoders are the encoders of the levels and dictionaries in use besides the default
// ones (each is made on first use and kept: a process uses one or two).
var encoders sync.Map // encoderKey -> *cachedEncoder

// encoderFor returns the encoder of level with the dictionary d (nil: none).
func encoderFor(level zstd.EncoderLevel, d *ResponseDict) (*zstd.Encoder, error) {
	if level == zstd.SpeedFastest {
		if d != nil {
			return d.enc, nil
		}
		if zstdEncoderErr != nil {
			return nil, fmt.Errorf("spiders: response encoder: %w", zstdEncoderErr)
		}
		return zstdEncoder, nil
	}
	v, _ := encoders.LoadOrStore(encoderKey{level, d}, &cachedEncoder{})
	c := v.(*cachedEncoder)
	c.once.Do(func() {
		var more []zstd.EOption
		if d != nil {
			more = append(more, zstd.WithEncoderDict(d.data))
		}
		c.enc, c.err = zstd.NewWriter(nil, encoderOptions(level, more...)...)
		if c.err != nil {
			c.err = fmt.Errorf("spiders: response encoder: %w", c.err)
		}
	})
	return c.enc, c.err
}

// responseHead is a version 3 response on a stream, but its body.
type responseHead struct {
	V         int         `json:"v"`
	Request   *Request    `json:"request"`
	URL       string      `json:"url"`
	Status    int         `json:"status"`
	Headers   http.Header `json:"headers,omitempty"`
	BodyLen   int         `json:"body_len"`
	Truncated bool        `json:"truncated,omitempty"`
	Charset   string      `json:"charset,omitempty"`
	FetchedAt time.Time   `json:"fetched_at"`
	Rendered  string      `json:"rendered,omitempty"`
}

// MarshalResponse encodes r (version 3: one zstd frame of a JSON head and the body, at
// the default level).
func MarshalResponse(r *Response) ([]byte, error) { return MarshalResponseWith(r, "", nil) }

// MarshalResponseDict is MarshalResponse compressing with the dictionary d (nil: none).
// The zstd frame names d's ID: decoding needs d registered (RegisterResponseDict).
func MarshalResponseDict(r *Response, d *ResponseDict) ([]byte, error) {
	return MarshalResponseWith(r, "", d)
}

// MarshalResponseWith encodes r with the compression setting c ("" the default; s2: one
// S2 block; off: the version 3 content as it is) and the dictionary d (nil: none;
// ignored by s2 and off).
func MarshalResponseWith(r *Response, c string, d *ResponseDict) ([]byte, error) {
	if c == "" {
		c = DefaultResponseCompression
	}
	if c == ResponseCompressS2 {
		return encodePlain(r, encodeS2)
	}
	level, compress, err := responseLevel(c)
	if err != nil {
		return nil, err
	}
	if !compress {
		var buf bytes.Buffer
		if err := writeResponsePlain(&buf, r); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	}
	enc, err := encoderFor(level, d)
	if err != nil {
		return nil, err
	}
	return encodePlain(r, func(plain []byte) ([]byte, error) {
		return enc.EncodeAll(plain, make([]byte, 0, len(plain)/3+64)), nil
	})
}

// encodePlain writes r's version 3 content into a pooled buffer and returns what encode
// makes of it (encode must not keep the slice it is given).
func encodePlain(r *Response, encode func(plain []byte) ([]byte, error)) ([]byte, error) {
	buf := plainBuffers.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= 1<<20 {
			buf.Reset()
			plainBuffers.Put(buf)
		}
	}()
	if err := writeResponsePlain(buf, r); err != nil {
		return nil, err
	}
	return encode(buf.Bytes())
}

// encodeS2 returns the S2 marker and one S2 block of plain (a response's version 3
// content), compressed in a pooled buffer and copied out at its size (an S2 block needs
// room for more than the content before it knows its size).
func encodeS2(plain []byte) ([]byte, error) {
	scratch := s2Buffers.Get().(*[]byte)
	defer func() {
		if cap(*scratch) <= 1<<20 {
			s2Buffers.Put(scratch)
		}
	}()
	n := s2.MaxEncodedLen(len(plain))
	if n < 0 {
		return nil, fmt.Errorf("spiders: encode response: %d bytes too large for S2", len(plain))
	}
	if n > cap(*scratch) {
		*scratch = make([]byte, n)
	}
	block := s2.Encode((*scratch)[:cap(*scratch)], plain)
	out := make([]byte, 0, len(s2Magic)+len(block))
	return append(append(out, s2Magic...), block...), nil
}

// s2Buffers pools the buffers S2 blocks are written in (up to 1 MB each).
var s2Buffers = sync.Pool{New: func() any { return new([]byte) }}

// decodeS2 decodes a response stored with S2: its block's stated size is checked
// against what a body of maxBody can take before anything is allocated.
func decodeS2(b []byte, maxBody int64) (*Response, error) {
	block := b[len(s2Magic):]
	n, err := s2.DecodedLen(block)
	if err != nil {
		return nil, fmt.Errorf("spiders: decompress response: %w", err)
	}
	if int64(n) > maxBody+maxResponseHead+int64(len(v3Marker)+binary.MaxVarintLen64) {
		return nil, fmt.Errorf("%w: decompresses to %d bytes", ErrBodyTooLarge, n)
	}
	plain, err := s2.Decode(make([]byte, n), block)
	if err != nil {
		return nil, fmt.Errorf("spiders: decompress response: %w", err)
	}
	if !bytes.HasPrefix(plain, v3Marker) {
		return nil, errors.New("spiders: decode response: S2 block without the version 3 marker")
	}
	return decodePlain(plain, maxBody)
}

// ResponsePlain returns the content of r's zstd frame before compression (what a
// dictionary is trained on).
func ResponsePlain(r *Response) ([]byte, error) {
	var buf bytes.Buffer
	if err := writeResponsePlain(&buf, r); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeResponsePlain writes the version 3 content of r to buf: marker, head length,
// head, body.
func writeResponsePlain(buf *bytes.Buffer, r *Response) error {
	head, err := json.Marshal(responseHead{
		V: ResponseVersion, Request: r.Request, URL: r.URL, Status: r.Status,
		Headers: r.Headers, BodyLen: len(r.Body), Truncated: r.Truncated, FetchedAt: r.FetchedAt,
		Charset: r.Charset, Rendered: r.RenderedBy,
	})
	if err != nil {
		return fmt.Errorf("spiders: encode response: %w", err)
	}
	if len(head) > maxResponseHead {
		return fmt.Errorf("spiders: encode response: head of %d bytes (request, URL and headers) over %d", len(head), maxResponseHead)
	}
	buf.Grow(len(v3Marker) + binary.MaxVarintLen64 + len(head) + len(r.Body))
	buf.Write(v3Marker)
	var n [binary.MaxVarintLen64]byte
	buf.Write(n[:binary.PutUvarint(n[:], uint64(len(head)))])
	buf.Write(head)
	buf.Write(r.Body)
	return nil
}

// plainBuffers pools the buffers responses are written in before compression (up to
// 1 MB each).
var plainBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// UnmarshalResponse decodes a response written by MarshalResponse (any version), with
// bodies up to MaxDecodedBody. Stages use UnmarshalResponseLimit.
func UnmarshalResponse(b []byte) (*Response, error) { return UnmarshalResponseLimit(b, MaxDecodedBody) }

// ErrBodyTooLarge is returned for a stored response whose body decodes to more than the
// limit asked for: a forged or foreign entry, never one this build's fetcher wrote
// under the same max_body_size.
var ErrBodyTooLarge = errors.New("spiders: stored response larger than max_body_size")

// UnmarshalResponseLimit is UnmarshalResponse for bodies of at most maxBody bytes (the
// spider's max_body_size). It never decompresses past what a body of that size can take
// in the wire format, so a small forged entry that claims or expands to gigabytes costs
// at most about maxBody of memory (twice that for the older JSON versions).
func UnmarshalResponseLimit(b []byte, maxBody int64) (*Response, error) {
	if maxBody <= 0 || maxBody > MaxDecodedBody {
		maxBody = MaxDecodedBody
	}
	if !bytes.HasPrefix(b, zstdMagic) {
		if bytes.HasPrefix(b, s2Magic) {
			return decodeS2(b, maxBody)
		}
		if bytes.HasPrefix(b, v3Marker) {
			return decodePlain(b, maxBody)
		}
		return decodeJSONResponse(b, maxBody)
	}
	var h zstd.Header
	if err := h.Decode(b); err != nil {
		return nil, fmt.Errorf("spiders: decompress response: %w", err)
	}
	if !h.HasFCS {
		// Not written by EncodeAll (version 2 writers also set the size; a foreign
		// frame may not): read it in bounded chunks.
		plain, err := decodeLimited(b, 2*maxBody+maxResponseHead)
		if err != nil {
			return nil, err
		}
		return decodeAnyPlain(plain, maxBody)
	}
	// Version 2 JSON escaping and base64 take a body to at most twice its size.
	if h.FrameContentSize > uint64(2*maxBody+maxResponseHead) {
		return nil, fmt.Errorf("%w: decompresses to %d bytes", ErrBodyTooLarge, h.FrameContentSize)
	}
	plain, err := decodeSized(b, int(h.FrameContentSize))
	if err != nil {
		return nil, err
	}
	return decodeAnyPlain(plain, maxBody)
}

// decodeAnyPlain reads the decompressed content of a response of any version.
func decodeAnyPlain(plain []byte, maxBody int64) (*Response, error) {
	if bytes.HasPrefix(plain, v3Marker) {
		return decodePlain(plain, maxBody)
	}
	return decodeJSONResponse(plain, maxBody)
}

// decodePlain reads the version 3 content plain; the body is a slice of it.
func decodePlain(plain []byte, maxBody int64) (*Response, error) {
	rest := plain[len(v3Marker):]
	n, k := binary.Uvarint(rest)
	if k <= 0 || n > uint64(len(rest)-k) {
		return nil, errors.New("spiders: decode response: head length out of range")
	}
	var h responseHead
	if err := json.Unmarshal(rest[k:k+int(n)], &h); err != nil {
		return nil, fmt.Errorf("spiders: decode response: %w", err)
	}
	if h.V != ResponseVersion {
		return nil, fmt.Errorf("spiders: response version %d in a version %d frame", h.V, ResponseVersion)
	}
	body := rest[k+int(n):]
	if h.BodyLen != len(body) {
		return nil, fmt.Errorf("spiders: decode response: body of %d bytes, head says %d", len(body), h.BodyLen)
	}
	if int64(len(body)) > maxBody {
		return nil, fmt.Errorf("%w: body of %d bytes, limit %d", ErrBodyTooLarge, len(body), maxBody)
	}
	r := &Response{Request: h.Request, URL: h.URL, Status: h.Status, Headers: h.Headers, Body: body,
		Truncated: h.Truncated, FetchedAt: h.FetchedAt, Charset: h.Charset, RenderedBy: h.Rendered}
	return checkDecoded(r)
}

// checkDecoded checks what every version must carry and fills defaults.
func checkDecoded(r *Response) (*Response, error) {
	if r.Request == nil {
		return nil, fmt.Errorf("spiders: response for %q has no request", r.URL)
	}
	if err := r.Request.Validate(); err != nil {
		return nil, err
	}
	if r.Headers == nil {
		r.Headers = http.Header{}
	}
	if len(r.Body) == 0 {
		r.Body = nil
	}
	return r, nil
}

// decodeSized decompresses the zstd frame b whose header says it holds size bytes into
// one buffer of that size; a frame holding more (a forged header) is an error, caught
// before it is expanded past the buffer.
func decodeSized(b []byte, size int) ([]byte, error) {
	decs, err := decodersFor(b)
	if err != nil {
		return nil, err
	}
	out, err := decs.all.DecodeAll(b, make([]byte, 0, size))
	if err != nil {
		return nil, fmt.Errorf("spiders: decompress response: %w", err)
	}
	if len(out) != size {
		return nil, fmt.Errorf("spiders: decompress response: %d bytes, its header says %d", len(out), size)
	}
	return out, nil
}

// withDecoder runs read with a pooled streaming decoder (of the dictionary b names) set
// to read the zstd data b.
func withDecoder(b []byte, read func(d *zstd.Decoder) ([]byte, error)) ([]byte, error) {
	decs, err := decodersFor(b)
	if err != nil {
		return nil, err
	}
	d := decs.streams.Get().(*zstd.Decoder)
	defer decs.streams.Put(d)
	if err := d.Reset(bytes.NewReader(b)); err != nil {
		return nil, fmt.Errorf("spiders: decompress response: %w", err)
	}
	defer d.Reset(nil) //nolint:errcheck // drops the reference to b
	return read(d)
}
