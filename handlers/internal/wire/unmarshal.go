package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"

	"github.com/streamcrawl/streamcrawl/spiders"
)

// Unmarshal decodes a response written by Marshal (any version), with
// bodies up to MaxDecodedBody. Stages use UnmarshalLimit.
func Unmarshal(b []byte) (*spiders.Response, error) { return UnmarshalLimit(b, MaxDecodedBody) }

// ErrBodyTooLarge is returned for a stored response whose body decodes to more than the
// limit asked for: a forged or foreign entry, never one this build's fetcher wrote
// under the same max_body_size.
var ErrBodyTooLarge = errors.New("wire: stored response larger than max_body_size")

// UnmarshalLimit is Unmarshal for bodies of at most maxBody bytes (the
// spider's max_body_size). It never decompresses past what a body of that size can take
// in the wire format, so a small forged entry that claims or expands to gigabytes costs
// at most about maxBody of memory (twice that for the older JSON versions).
func UnmarshalLimit(b []byte, maxBody int64) (*spiders.Response, error) {
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
		return decodeJSON(b, maxBody)
	}
	var h zstd.Header
	if err := h.Decode(b); err != nil {
		return nil, fmt.Errorf("wire: decompress response: %w", err)
	}
	if !h.HasFCS {
		// Not written by EncodeAll (version 2 writers also set the size; a foreign
		// frame may not): read it in bounded chunks.
		plain, err := decodeLimited(b, 2*maxBody+maxHead)
		if err != nil {
			return nil, err
		}
		return decodeAnyPlain(plain, maxBody)
	}
	// Version 2 JSON escaping and base64 take a body to at most twice its size.
	if h.FrameContentSize > uint64(2*maxBody+maxHead) {
		return nil, fmt.Errorf("%w: decompresses to %d bytes", ErrBodyTooLarge, h.FrameContentSize)
	}
	plain, err := decodeSized(b, int(h.FrameContentSize))
	if err != nil {
		return nil, err
	}
	return decodeAnyPlain(plain, maxBody)
}

// decodeS2 decodes a response stored with S2: its block's stated size is checked
// against what a body of maxBody can take before anything is allocated.
func decodeS2(b []byte, maxBody int64) (*spiders.Response, error) {
	block := b[len(s2Magic):]
	n, err := s2.DecodedLen(block)
	if err != nil {
		return nil, fmt.Errorf("wire: decompress response: %w", err)
	}
	if int64(n) > maxBody+maxHead+int64(len(v3Marker)+binary.MaxVarintLen64) {
		return nil, fmt.Errorf("%w: decompresses to %d bytes", ErrBodyTooLarge, n)
	}
	plain, err := s2.Decode(make([]byte, n), block)
	if err != nil {
		return nil, fmt.Errorf("wire: decompress response: %w", err)
	}
	if !bytes.HasPrefix(plain, v3Marker) {
		return nil, errors.New("wire: decode response: S2 block without the version 3 marker")
	}
	return decodePlain(plain, maxBody)
}

// decodeAnyPlain reads the decompressed content of a response of any version.
func decodeAnyPlain(plain []byte, maxBody int64) (*spiders.Response, error) {
	if bytes.HasPrefix(plain, v3Marker) {
		return decodePlain(plain, maxBody)
	}
	return decodeJSON(plain, maxBody)
}

// decodePlain reads the version 3 content plain; the body is a slice of it.
func decodePlain(plain []byte, maxBody int64) (*spiders.Response, error) {
	rest := plain[len(v3Marker):]
	n, k := binary.Uvarint(rest)
	if k <= 0 || n > uint64(len(rest)-k) {
		return nil, errors.New("wire: decode response: head length out of range")
	}
	var h responseHead
	if err := json.Unmarshal(rest[k:k+int(n)], &h); err != nil {
		return nil, fmt.Errorf("wire: decode response: %w", err)
	}
	if h.V != Version {
		return nil, fmt.Errorf("wire: response version %d in a version %d frame", h.V, Version)
	}
	body := rest[k+int(n):]
	if h.BodyLen != len(body) {
		return nil, fmt.Errorf("wire: decode response: body of %d bytes, head says %d", len(body), h.BodyLen)
	}
	if int64(len(body)) > maxBody {
		return nil, fmt.Errorf("%w: body of %d bytes, limit %d", ErrBodyTooLarge, len(body), maxBody)
	}
	r := &spiders.Response{Request: h.Request, URL: h.URL, Status: h.Status, Headers: h.Headers, Body: body,
		Truncated: h.Truncated, FetchedAt: h.FetchedAt, Charset: h.Charset, RenderedBy: h.Rendered}
	return checkDecoded(r)
}

// checkDecoded checks what every version must carry and fills defaults.
func checkDecoded(r *spiders.Response) (*spiders.Response, error) {
	if r.Request == nil {
		return nil, fmt.Errorf("wire: response for %q has no request", r.URL)
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
		return nil, fmt.Errorf("wire: decompress response: %w", err)
	}
	if len(out) != size {
		return nil, fmt.Errorf("wire: decompress response: %d bytes, its header says %d", len(out), size)
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
		return nil, fmt.Errorf("wire: decompress response: %w", err)
	}
	defer d.Reset(nil) //nolint:errcheck // drops the reference to b
	return read(d)
}
