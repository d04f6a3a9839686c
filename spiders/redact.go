package spiders

import (
	"bytes"
	"net/http"
	"regexp"
	"strings"
)

// Credentials travel in URLs (http://user:secret@host/, a proxy's
// http://user:secret@proxy:3128) and go over the wire as they must, but nothing the
// crawler writes for people or keeps beside the pages (logs, dead letters as listed,
// items, WARC records, status, the dashboard) may show them. RedactedURL is for a
// URL known to be one; RedactText is for text that may hold URLs anywhere (an error
// message, a log line, a request's JSON); RedactHeader for the request headers that
// carry them as Basic auth.

// userInfo matches the scheme and user info of a URL in text: the user info runs from
// "://" to the '@' before the host, without '/', '?', '#' or a space in it (RFC 3986:
// unreserved, percent-encoded, sub-delims and ':').
var userInfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.\-]*://)[A-Za-z0-9\-._~%!$&'()*+,;=:]*@`)

// RedactText is s with the user info of every URL in it left out, as RedactedURL leaves
// it out of one URL: "fetch http://u:secret@host/p: EOF" is "fetch http://host/p: EOF".
func RedactText(s string) string {
	if !strings.Contains(s, "@") {
		return s // the common case: no '@', nothing to redact
	}
	return userInfo.ReplaceAllString(s, "$1")
}

// RedactBytes is RedactText of b; b itself when nothing is redacted.
func RedactBytes(b []byte) []byte {
	if bytes.IndexByte(b, '@') < 0 {
		return b
	}
	return userInfo.ReplaceAll(b, []byte("$1"))
}

// credentialHeaders are the request headers that carry credentials.
var credentialHeaders = []string{"Authorization", "Proxy-Authorization"}

// RedactHeader returns h without the values of the headers that carry credentials
// (Authorization, Proxy-Authorization): each is kept, with "***" for its
// value, so a reader sees it was sent. h itself is not changed.
func RedactHeader(h http.Header) http.Header {
	var out http.Header
	for _, k := range credentialHeaders {
		if _, ok := h[k]; !ok {
			continue
		}
		if out == nil {
			out = h.Clone()
		}
		out[k] = []string{"***"}
	}
	if out == nil {
		return h
	}
	return out
}
