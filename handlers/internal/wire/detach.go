package wire

import (
	"bytes"
	"net/http"

	"github.com/streamcrawl/streamcrawl/spiders"
)

// Detach returns r as Unmarshal gives it back after Marshal, without the trip: a new
// spiders.Response with r's request, URL, status, headers (an empty set when r has
// none), charset, truncation, fetch time (without its monotonic clock reading) and
// renderer, and its own copy of the body (nil when empty), so that r's body buffer may
// be reused. The request and the headers are shared with r: r's owner must not change
// them once it hands the copy on.
//
// A process that runs the fetch and parse stages together hands a fetched response to
// its own parse stage this way and spares it the decoding of the entry it published.
func Detach(r *spiders.Response) *spiders.Response {
	out := &spiders.Response{Request: r.Request, URL: r.URL, Status: r.Status, Headers: r.Headers,
		Charset: r.Charset, Truncated: r.Truncated, FetchedAt: r.FetchedAt.Round(0), RenderedBy: r.RenderedBy}
	if out.Headers == nil {
		out.Headers = http.Header{}
	}
	if len(r.Body) > 0 {
		out.Body = bytes.Clone(r.Body)
	}
	return out
}

// Size is about the bytes of memory r holds: its body, its URLs and its
// headers, and a fixed allowance for the rest (what a hand-off of responses counts
// against its bound).
func Size(r *spiders.Response) int64 {
	n := int64(len(r.Body) + len(r.URL) + sizeOverhead)
	if r.Request != nil {
		n += int64(len(r.Request.URL))
	}
	for k, vs := range r.Headers {
		n += int64(len(k))
		for _, v := range vs {
			n += int64(len(v) + 16)
		}
	}
	return n
}

// sizeOverhead is what Size allows for a response's structs, its
// request's other fields and the map headers.
const sizeOverhead = 512
