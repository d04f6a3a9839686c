package spiders

import (
	"mime"
	"net/http"
	"strings"
	"testing"
)

// TestContentTypeIsWhatParseMediaTypeGives: ContentType gives the media type that
// mime.ParseMediaType gives when it parses the header, and its fallback (the part before
// ';', trimmed, lower-cased) when it does not, for valid, odd and broken headers.
func TestContentTypeIsWhatParseMediaTypeGives(t *testing.T) {
	ref := func(ct string) string {
		if ct == "" {
			return ""
		}
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil {
			return strings.ToLower(strings.TrimSpace(strings.SplitN(ct, ";", 2)[0]))
		}
		return mt
	}
	for _, ct := range []string{
		"", "text/html", "TEXT/HTML", " text/html ; charset=UTF-8", "text/html;charset=utf-8;charset=latin1",
		"text/html; charset", "text/html; =x", "application/xhtml+xml; q=0.9", "text/html;", ";", "html",
		"text/ html", "text/html\t; a=\"b;c\"", "Text/Html; Charset=\"utf-8\"", "image/svg+xml; charset=utf-8; x=",
		"\u0130mage/png", "text/html; charset=utf-8, text/plain",
	} {
		r := &Response{Headers: http.Header{"Content-Type": {ct}}}
		if got, want := r.ContentType(), ref(ct); got != want {
			t.Errorf("%q: %q, want %q", ct, got, want)
		}
	}
}
