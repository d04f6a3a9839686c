package wire

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/klauspost/compress/zstd"

	"github.com/streamcrawl/streamcrawl/spiders"
)

// responseWire is a version 1 or 2 response: JSON, the fields of a version 3 head
// (those versions never wrote "rendered") and the body in the same object: a string
// ("text"), base64 ("body") or, in version 1, a zstd-compressed base64 body.
type responseWire struct {
	responseHead
	Encoding string  `json:"body_encoding,omitempty"`
	Body     []byte  `json:"body,omitempty"`
	Text     *string `json:"text,omitempty"`
}

// decodeJSON reads a version 1 or 2 response (its JSON, decompressed).
func decodeJSON(b []byte, maxBody int64) (*spiders.Response, error) {
	var w responseWire
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("wire: decode response: %w", err)
	}
	if w.V != 1 && w.V != 2 {
		return nil, fmt.Errorf("wire: response version %d not supported (want 1 to %d)", w.V, Version)
	}
	if w.BodyLen < 0 || int64(w.BodyLen) > maxBody {
		return nil, fmt.Errorf("%w: body length %d, limit %d", ErrBodyTooLarge, w.BodyLen, maxBody)
	}
	r := &spiders.Response{Request: w.Request, URL: w.URL, Status: w.Status, Headers: w.Headers,
		Truncated: w.Truncated, FetchedAt: w.FetchedAt, Charset: w.Charset}
	switch w.Encoding {
	case "":
		r.Body = w.Body
		if w.Text != nil {
			r.Body = []byte(*w.Text)
		}
	case "zstd":
		body, err := decodeLimited(w.Body, maxBody)
		if err != nil {
			return nil, fmt.Errorf("wire: body of %s: %w", w.URL, err)
		}
		r.Body = body
	default:
		return nil, fmt.Errorf("wire: unknown body encoding %q", w.Encoding)
	}
	if int64(len(r.Body)) > maxBody {
		return nil, fmt.Errorf("%w: body of %d bytes, limit %d", ErrBodyTooLarge, len(r.Body), maxBody)
	}
	return checkDecoded(r)
}

// decodeLimited decompresses the zstd data b of unknown size, failing with
// ErrBodyTooLarge once the output passes limit bytes.
func decodeLimited(b []byte, limit int64) ([]byte, error) {
	return withDecoder(b, func(d *zstd.Decoder) ([]byte, error) {
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
				return nil, fmt.Errorf("wire: decompress response: %w", err)
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
	})
}
