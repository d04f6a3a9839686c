package spiders

import (
	"net/http"
	"strings"
)

// sniff returns the media type the WHATWG sniffing algorithm gives body.
func sniff(body []byte) string { return http.DetectContentType(body) }

// LooksBinary reports whether body, served with a textual content type, is in fact
// not text: an image, an archive, a font, a PDF or other bytes a browser would not
// render as a page. An empty body is not binary.
func LooksBinary(body []byte) bool {
	if len(body) == 0 {
		return false
	}
	mt := sniff(body)
	return !strings.HasPrefix(mt, "text/") && !strings.HasSuffix(mt, "+xml") &&
		!strings.HasSuffix(mt, "/xml") && !strings.HasPrefix(mt, "application/json")
}
