package spiders

import (
	"net/url"
	"strings"
)

// WireURL writes u as a browser sends it (WHATWG URL): the host as its key (HostKey:
// an IDN in ASCII, lower case, the default port and a port's leading zeros dropped),
// the path escaped as net/url escapes it (spaces, quotes, non-ASCII bytes percent-encoded), the query with the
// bytes of the special-query percent-encode set percent-encoded (controls, space, '"',
// '#', '<', '>', '\” and non-ASCII: net/url leaves a query as it was written, so "?q=a
// b" went out with a raw space and servers answered 400), escapes already there kept
// as written, the fragment dropped. User info is kept (it is sent as Basic auth):
// RedactedURL leaves it out.
func WireURL(u *url.URL) string {
	w := *u
	w.Fragment, w.RawFragment = "", ""
	w.RawQuery = WireQuery(u.RawQuery)
	if h := HostKeyOf(u); h != "" {
		w.Host = h
	}
	if w.Path == "" && w.Host != "" && w.Opaque == "" {
		w.Path = "/"
	}
	return w.String()
}

// WireQuery is WireURL's query (without the '?').
func WireQuery(q string) string {
	if !anyByte(q, queryEscaped) {
		return q
	}
	var b strings.Builder
	b.Grow(len(q) + 8)
	for i := 0; i < len(q); i++ {
		if c := q[i]; queryEscaped(c) {
			b.WriteByte('%')
			b.WriteByte(upperHex[c>>4])
			b.WriteByte(upperHex[c&15])
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// queryEscaped reports the bytes of WHATWG's special-query percent-encode set: C0
// controls, space, '"', '#', '<', '>', '\” and every byte above '~'.
func queryEscaped(c byte) bool {
	return c <= ' ' || c > '~' || c == '"' || c == '#' || c == '<' || c == '>' || c == '\''
}

// RedactedURL is raw without the credentials of its user info, for what is logged or
// stored with an item (_url): "http://user:secret@host/p" is "http://host/p". A URL
// that does not parse comes back as it is when it has no '@', else with everything
// before the host cut.
func RedactedURL(raw string) string {
	if !strings.Contains(raw, "@") {
		return raw // the common case: nothing to redact, nothing parsed
	}
	u, err := url.Parse(raw)
	if err != nil {
		if i, j := strings.Index(raw, "://"), strings.LastIndexByte(raw, '@'); i >= 0 && j > i {
			return raw[:i+3] + raw[j+1:]
		}
		return raw
	}
	if u.User == nil {
		return raw
	}
	u.User = nil
	return u.String()
}
