package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/klauspost/compress/s2"

	"github.com/streamcrawl/streamcrawl/spiders"
)

// Marshal encodes r (version 3: one zstd frame of a JSON head and the body, at
// the default level).
func Marshal(r *spiders.Response) ([]byte, error) { return MarshalWith(r, "", nil) }

// MarshalDict is Marshal compressing with the dictionary d (nil: none).
// The zstd frame names d's ID: decoding needs d registered (RegisterDict).
func MarshalDict(r *spiders.Response, d *Dict) ([]byte, error) {
	return MarshalWith(r, "", d)
}

// MarshalWith encodes r with the compression setting c ("" the default; s2: one
// S2 block; off: the version 3 content as it is) and the dictionary d (nil: none;
// ignored by s2 and off).
func MarshalWith(r *spiders.Response, c string, d *Dict) ([]byte, error) {
	if c == "" {
		c = DefaultCompression
	}
	if c == CompressS2 {
		return encodePlain(r, encodeS2)
	}
	level, compress, err := levelOf(c)
	if err != nil {
		return nil, err
	}
	if !compress {
		var buf bytes.Buffer
		if err := writePlain(&buf, r); err != nil {
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
func encodePlain(r *spiders.Response, encode func(plain []byte) ([]byte, error)) ([]byte, error) {
	buf := plainBuffers.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= 1<<20 {
			buf.Reset()
			plainBuffers.Put(buf)
		}
	}()
	if err := writePlain(buf, r); err != nil {
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
		return nil, fmt.Errorf("wire: encode response: %d bytes too large for S2", len(plain))
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

// Plain returns the content of r's zstd frame before compression (what a
// dictionary is trained on).
func Plain(r *spiders.Response) ([]byte, error) {
	var buf bytes.Buffer
	if err := writePlain(&buf, r); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writePlain writes the version 3 content of r to buf: marker, head length,
// head, body.
func writePlain(buf *bytes.Buffer, r *spiders.Response) error {
	head, err := json.Marshal(responseHead{
		V: Version, Request: r.Request, URL: r.URL, Status: r.Status,
		Headers: r.Headers, BodyLen: len(r.Body), Truncated: r.Truncated, FetchedAt: r.FetchedAt,
		Charset: r.Charset, Rendered: r.RenderedBy,
	})
	if err != nil {
		return fmt.Errorf("wire: encode response: %w", err)
	}
	if len(head) > maxHead {
		return fmt.Errorf("wire: encode response: head of %d bytes (request, URL and headers) over %d", len(head), maxHead)
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
