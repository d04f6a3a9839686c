package warc

import (
	"bytes"
	"crypto/sha1"
	"encoding/base32"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders"
)

// Version is the WARC version written.
const Version = "WARC/1.1"

// Record types written.
const (
	TypeRequest  = "request"
	TypeResponse = "response"
)

// Header field names used by this package.
const (
	FieldType          = "WARC-Type"
	FieldRecordID      = "WARC-Record-ID"
	FieldDate          = "WARC-Date"
	FieldTargetURI     = "WARC-Target-URI"
	FieldPayloadDigest = "WARC-Payload-Digest"
	FieldBlockDigest   = "WARC-Block-Digest"
	FieldConcurrentTo  = "WARC-Concurrent-To"
	FieldContentType   = "Content-Type"
	FieldContentLength = "Content-Length"
	// FieldRequest carries the crawler's request (JSON, one line) on request records,
	// so that a replay can run the callback it named with its meta.
	FieldRequest = "Streamcrawl-Request"
	// FieldRenderedBy marks a response record whose body is a browser's DOM (after the
	// page's scripts, waits and actions), not the bytes the server sent, and names the
	// browser ("HeadlessChrome/156.0.0.0"). Status and headers are the main document's.
	FieldRenderedBy = "Streamcrawl-Rendered-By"
)

// Record is one WARC record: named header fields and a block.
type Record struct {
	Header map[string]string // named header fields (WARC-Type, WARC-Target-URI, ...)
	Block  []byte            // the record's content block
}

// Type returns the record's WARC-Type.
func (r *Record) Type() string { return r.Header[FieldType] }

// ID returns the record's WARC-Record-ID.
func (r *Record) ID() string { return r.Header[FieldRecordID] }

// RecordID derives a record ID ("<urn:uuid:...>", a name-based UUID) from key, so that the
// same page archived twice gets the same ID.
func RecordID(key string) string {
	sum := sha1.Sum([]byte("streamcrawl-warc:" + key))
	sum[6] = (sum[6] & 0x0f) | 0x50 // version 5
	sum[8] = (sum[8] & 0x3f) | 0x80 // RFC 4122 variant
	return fmt.Sprintf("<urn:uuid:%x-%x-%x-%x-%x>", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16])
}

// Digest is "sha1:" and the base32 SHA-1 of b, as WARC digests are written.
func Digest(b []byte) string {
	sum := sha1.Sum(b)
	return "sha1:" + base32.StdEncoding.EncodeToString(sum[:])
}

// Page is one fetched page as the archive needs it.
type Page struct {
	// Key identifies the page's source (crawl, stream and entry ID); it makes the
	// records' IDs.
	Key string
	// URL is the final URL fetched; Method and RequestHeader the request sent.
	URL           string
	Method        string      // the request's method
	RequestHeader http.Header // the request's header fields
	// RequestJSON is the crawler's request (callback, meta), kept for replays.
	RequestJSON []byte
	// Status, Header and Body are the response (the body decoded).
	Status int
	Header http.Header // the response's header fields
	Body   []byte      // the response's body, decoded
	// Date is when the page was fetched.
	Date time.Time
	// RenderedBy names the browser that rendered Body; empty when it came over HTTP.
	RenderedBy string
}

// Records returns the request and response records of p.
func (p *Page) Records() (req, res *Record) {
	date := p.Date.UTC().Format(time.RFC3339Nano) // WARC 1.1 allows fractions of a second
	resID, reqID := RecordID(p.Key+"/response"), RecordID(p.Key+"/request")
	resBlock := httpResponse(p.Status, p.Header, p.Body)
	// Credentials in the URL (user info) and the request's Basic auth are sent, not
	// archived: an archive is read by people and tools that must not learn them.
	target := spiders.RedactedURL(p.URL)
	res = &Record{Header: map[string]string{
		FieldType: TypeResponse, FieldRecordID: resID, FieldDate: date, FieldTargetURI: target,
		FieldPayloadDigest: Digest(p.Body), FieldBlockDigest: Digest(resBlock),
		FieldContentType: "application/http;msgtype=response",
	}, Block: resBlock}
	if p.RenderedBy != "" {
		res.Header[FieldRenderedBy] = p.RenderedBy
	}
	method := p.Method
	if method == "" {
		method = http.MethodGet
	}
	reqBlock := httpRequest(method, target, spiders.RedactHeader(p.RequestHeader))
	req = &Record{Header: map[string]string{
		FieldType: TypeRequest, FieldRecordID: reqID, FieldDate: date, FieldTargetURI: target,
		FieldConcurrentTo: resID, FieldBlockDigest: Digest(reqBlock),
		FieldContentType: "application/http;msgtype=request",
	}, Block: reqBlock}
	if len(p.RequestJSON) > 0 {
		req.Header[FieldRequest] = string(spiders.RedactBytes(bytes.ReplaceAll(p.RequestJSON, []byte("\n"), nil)))
	}
	return req, res
}

// httpResponse writes an HTTP/1.1 response message whose body is already decoded.
func httpResponse(status int, h http.Header, body []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", status, http.StatusText(status))
	h = h.Clone()
	if h == nil {
		h = http.Header{}
	}
	for _, k := range []string{"Content-Encoding", "Transfer-Encoding", "Content-Length"} {
		h.Del(k)
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	writeHeader(&b, h)
	b.Write(body)
	return b.Bytes()
}

// httpRequest writes the HTTP/1.1 request message of a GET-like request.
func httpRequest(method, rawURL string, h http.Header) []byte {
	var b bytes.Buffer
	target, host := rawURL, ""
	if u, err := url.Parse(rawURL); err == nil {
		target, host = u.RequestURI(), u.Host
	}
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\n", method, target)
	h = h.Clone()
	if h == nil {
		h = http.Header{}
	}
	if host != "" {
		h.Set("Host", host)
	}
	writeHeader(&b, h)
	return b.Bytes()
}

func writeHeader(b *bytes.Buffer, h http.Header) {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range h[k] {
			fmt.Fprintf(b, "%s: %s\r\n", k, strings.NewReplacer("\r", " ", "\n", " ").Replace(v))
		}
	}
	b.WriteString("\r\n")
}

// encode writes r as WARC: version line, header fields (fixed order, then the rest
// sorted), Content-Length, blank line, block, two CRLFs.
func (r *Record) encode(w *bytes.Buffer) {
	w.WriteString(Version + "\r\n")
	first := []string{FieldType, FieldRecordID, FieldDate, FieldTargetURI}
	seen := map[string]bool{FieldContentLength: true}
	for _, k := range first {
		if v, ok := r.Header[k]; ok {
			fmt.Fprintf(w, "%s: %s\r\n", k, v)
			seen[k] = true
		}
	}
	var rest []string
	for k := range r.Header {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		fmt.Fprintf(w, "%s: %s\r\n", k, r.Header[k])
	}
	fmt.Fprintf(w, "%s: %d\r\n\r\n", FieldContentLength, len(r.Block))
	w.Write(r.Block)
	w.WriteString("\r\n\r\n")
}
