package spiders

import (
	"bytes"
	"fmt"
	"mime"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/unicode"
)

// prescanBytes is how much of an HTML body is searched for a <meta> charset, as browsers do.
const prescanBytes = 1024

// DefaultCharset is the encoding of an HTML page that declares none and is not valid
// UTF-8: windows-1252, the browsers' fallback for Western locales (it is also what a
// page labelled iso-8859-1 really is).
const DefaultCharset = "windows-1252"

// byteOrderMarks and the encodings they announce; a BOM wins over every declaration.
var byteOrderMarks = []struct {
	bom  []byte
	name string
}{
	{[]byte{0xef, 0xbb, 0xbf}, "utf-8"},
	{[]byte{0xfe, 0xff}, "utf-16be"},
	{[]byte{0xff, 0xfe}, "utf-16le"},
}

// DecodeText returns a text body as UTF-8 and the name of the encoding it was found to
// be in, the way a browser decides it: a byte-order mark, then the charset of
// contentType, then (for HTML) a <meta charset> or <meta http-equiv="Content-Type"> in
// the first KB, then UTF-8 if the body is valid UTF-8, then detection: an East Asian
// encoding the body reads as (see detectLegacy), else DefaultCharset. Bodies that
// are not text (images, PDF, JSON, XML, which carry their own declarations) come back
// unchanged with an empty name. Bytes that are invalid in the encoding become U+FFFD.
func DecodeText(body []byte, contentType string) ([]byte, string, error) {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		mt = strings.ToLower(strings.TrimSpace(strings.SplitN(contentType, ";", 2)[0]))
	}
	isHTML := mt == "text/html" || mt == "application/xhtml+xml"
	if mt == "" {
		isHTML = strings.HasPrefix(sniff(body), "text/html")
	}
	if !isHTML && mt != "text/plain" && mt != "" {
		return body, "", nil
	}
	if mt == "" && !isHTML && !strings.HasPrefix(sniff(body), "text/plain") {
		return body, "", nil
	}
	enc, name := detectCharset(body, params["charset"], isHTML, mt == "application/xhtml+xml")
	for _, b := range byteOrderMarks {
		if bytes.HasPrefix(body, b.bom) {
			body = body[len(b.bom):] // the BOM named the encoding; it is not text
			break
		}
	}
	if name == "utf-8" {
		if utf8.Valid(body) {
			return body, name, nil
		}
		enc = unicode.UTF8 // replaces invalid sequences with U+FFFD
	}
	out, err := enc.NewDecoder().Bytes(body)
	if err != nil {
		return nil, "", fmt.Errorf("spiders: decode %s body: %w", name, err)
	}
	return out, name, nil
}

// detectCharset returns the encoding of body and its canonical name. An XHTML page
// (xhtml) is read as XML first: its <?xml encoding="..."?> declaration comes before a
// <meta>; any other HTML page falls back to the declaration when it has no <meta>.
func detectCharset(body []byte, declared string, isHTML, xhtml bool) (encoding.Encoding, string) {
	for _, b := range byteOrderMarks {
		if bytes.HasPrefix(body, b.bom) {
			e, name := charset.Lookup(b.name)
			return e, name
		}
	}
	if declared != "" {
		if e, name := lookupCharset(declared); e != nil {
			return e, name
		}
	}
	if isHTML {
		head := body[:min(len(body), prescanBytes)]
		labels := []string{metaCharset(head), xmlEncoding(head)}
		if xhtml {
			labels[0], labels[1] = labels[1], labels[0]
		}
		for _, label := range labels {
			if label == "" {
				continue
			}
			if e, name := lookupCharset(label); e != nil {
				return e, name
			}
		}
	}
	if validUTF8Prefix(body) {
		return encoding.Nop, "utf-8"
	}
	return detectLegacy(body)
}

// lookupCharset resolves a label as the WHATWG Encoding standard does. A document
// that declares UTF-16 in a <meta> cannot be UTF-16 (it was read as ASCII), so HTML
// treats that as UTF-8; a header declaring UTF-16 without a BOM is taken at its word.
func lookupCharset(label string) (encoding.Encoding, string) {
	e, name := charset.Lookup(label)
	if e == nil {
		return nil, ""
	}
	if name == "utf-8" {
		return encoding.Nop, name
	}
	return e, name
}

// validUTF8Prefix reports whether body is UTF-8, ignoring a rune cut at its end (a body
// cut at the size cap) when the rest has UTF-8 sequences of its own: a lone high byte at
// the end of an otherwise ASCII body is a legacy character, not half a rune.
func validUTF8Prefix(body []byte) bool {
	for i := len(body) - 1; i >= 0 && i > len(body)-4; i-- {
		if utf8.RuneStart(body[i]) {
			if !utf8.FullRune(body[i:]) {
				body = body[:i]
				return utf8.Valid(body) && !isASCII(body)
			}
			break
		}
	}
	return utf8.Valid(body)
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// metaCharset finds the charset a <meta> element of head declares: charset="..." or
// http-equiv="content-type" with content="...; charset=...".
func metaCharset(head []byte) string {
	if !bytes.Contains(bytes.ToLower(head), []byte("charset")) {
		return "" // the common case: no declaration to tokenize for
	}
	z := html.NewTokenizer(bytes.NewReader(head))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return ""
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			if string(name) != "meta" || !hasAttr {
				continue
			}
			var cs, content string
			httpEquiv := false
			for {
				k, v, more := z.TagAttr()
				switch strings.ToLower(string(k)) {
				case "charset":
					cs = strings.TrimSpace(string(v))
				case "http-equiv":
					httpEquiv = strings.EqualFold(strings.TrimSpace(string(v)), "content-type")
				case "content":
					content = string(v)
				}
				if !more {
					break
				}
			}
			if cs != "" {
				return cs
			}
			if httpEquiv && content != "" {
				if _, params, err := mime.ParseMediaType(content); err == nil && params["charset"] != "" {
					return params["charset"]
				}
			}
		}
	}
}

// xmlEncoding returns the encoding an XML declaration at the start of head names
// (<?xml version="1.0" encoding="windows-1252"?>), "" when there is none. A declaration
// naming UTF-16 in bytes that read as ASCII cannot be right and is ignored, as a
// <meta> would be.
func xmlEncoding(head []byte) string {
	h := bytes.TrimLeft(head, " \t\r\n")
	if !bytes.HasPrefix(h, []byte("<?xml")) {
		return ""
	}
	end := bytes.Index(h, []byte("?>"))
	if end < 0 {
		return ""
	}
	decl := h[:end]
	i := bytes.Index(decl, []byte("encoding"))
	if i < 0 {
		return ""
	}
	rest := bytes.TrimLeft(decl[i+len("encoding"):], " \t\r\n")
	if len(rest) == 0 || rest[0] != '=' {
		return ""
	}
	rest = bytes.TrimLeft(rest[1:], " \t\r\n")
	if len(rest) == 0 || rest[0] != '"' && rest[0] != '\'' {
		return ""
	}
	q := rest[0]
	j := bytes.IndexByte(rest[1:], q)
	if j < 0 {
		return ""
	}
	label := strings.TrimSpace(string(rest[1 : 1+j]))
	if strings.HasPrefix(strings.ToLower(label), "utf-16") {
		return ""
	}
	return label
}

// DeclaresUTF16 reports a Content-Type whose charset is UTF-16 (little or big endian):
// such a text is full of zero bytes, so the check for binary bodies must look at it
// decoded.
func DeclaresUTF16(contentType string) bool {
	_, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	_, name := charset.Lookup(params["charset"])
	return strings.HasPrefix(name, "utf-16")
}
