package wire

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/streamcrawl/streamcrawl/spiders"
)

// The version 2 writer, kept for the tests that read version 2.

// writeJSON writes the JSON of r (version 2, uncompressed) to buf.
func writeJSON(buf *bytes.Buffer, r *spiders.Response) error {
	w := responseWire{responseHead: responseHead{
		V: 2, Request: r.Request, URL: r.URL, Status: r.Status,
		Headers: r.Headers, BodyLen: len(r.Body), Truncated: r.Truncated, FetchedAt: r.FetchedAt,
		Charset: r.Charset,
	}}
	head, err := json.Marshal(w) // everything but the body
	if err != nil {
		return fmt.Errorf("wire: encode response: %w", err)
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
