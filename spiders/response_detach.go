package spiders

import (
	"bytes"
	"net/http"
)

// DetachResponse returns r as UnmarshalResponse gives it back after MarshalResponse,
// without the trip: a new Response with r's request, URL, status, headers (an empty
// set when r has none), charset, truncation, fetch time (without its monotonic clock
// reading) and renderer, and its own copy of the body (nil when empty), so that r's
// body buffer may be reused. The request and the headers are shared with r: r's
// owner must not change them once it hands the copy on.
//
// A process that runs the fetch and parse stages together hands a fetched response to
// its own parse stage this way and spares it the decoding of the entry it published.
func DetachResponse(r *Response) *Response {
	out := &Response{Request: r.Request, URL: r.URL, Status: r.Status, Headers: r.Headers,
		Charset: r.Charset, Truncated: r.Truncated, FetchedAt: r.FetchedAt.Round(0), RenderedBy: r.RenderedBy}
	if out.Headers == nil {
		out.Headers = http.Header{}
	}
	if len(r.Body) > 0 {
		out.Body = bytes.Clone(r.Body)
	}
	return out
}

// ResponseSize is about the bytes of memory r holds: its body, its URLs and its
// headers, and a fixed allowance for the rest (what a hand-off of responses counts
// against its bound).
func ResponseSize(r *Response) int64 {
	n := int64(len(r.Body) + len(r.URL) + responseSizeOverhead)
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

// responseSizeOverhead is what ResponseSize allows for a response's structs, its
// request's other fields and the map headers.
const responseSizeOverhead = 512
