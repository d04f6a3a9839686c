package spiders

import (
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// CanonicalURL returns the form of raw that duplicate filtering compares: the scheme
// lower-cased; the host as HostKey writes it (lower case, an IDN in ASCII, no trailing
// dot, the scheme's default port and a port's leading zeros dropped); user info kept; the fragment dropped, an empty path written "/", dot
// segments resolved, query parameters sorted by key then value (repeated keys and blank
// values kept, a lone "?" dropped) and percent-encoding normalised in path and query
// (escapes of unreserved characters decoded, the others in upper-case hex; '+' is kept
// as written).
//
// It returns an error for a malformed URL, a scheme other than http or https, or a URL
// without a host.
func CanonicalURL(raw string) (string, error) { return canonicalURL(raw, canonOpts{}) }

// canonOpts are what fingerprint rules change in a canonical URL (see
// FingerprintRules); the zero value is CanonicalURL's form.
type canonOpts struct {
	lowerPath bool                   // ASCII letters of the path lower-cased
	keep      func(name string) bool // nil keeps every query parameter
}

// canonicalURL is CanonicalURL with the changes o asks for.
func canonicalURL(raw string, o canonOpts) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return "", fmt.Errorf("spiders: canonical url: %w", err)
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return "", fmt.Errorf("spiders: canonical url %q: scheme %q is not http or https", raw, u.Scheme)
	}
	if p := u.Port(); p != "" {
		if _, err := strconv.ParseUint(p, 10, 16); err != nil {
			return "", fmt.Errorf("spiders: canonical url %q: invalid port %q", raw, p)
		}
	}
	// The host key's rules (HostKey), IDNA included: bücher.example and
	// xn--bcher-kva.example are one host for dedup as everywhere else.
	host := hostKey(scheme, u.Host)
	if host == "" {
		return "", fmt.Errorf("spiders: canonical url %q has no host", raw)
	}

	var b strings.Builder
	b.Grow(len(raw) + 8)
	b.WriteString(scheme)
	b.WriteString("://")
	if u.User != nil {
		b.WriteString(u.User.String())
		b.WriteByte('@')
	}
	b.WriteString(host)

	path := NormalizeEscapes(u.EscapedPath(), pathByte)
	if o.lowerPath {
		// After NormalizeEscapes, so that an escaped letter (/p%41ge) is decoded before
		// it is lower-cased, and /p%41ge and /page are one path.
		path = lowerOutsideEscapes(path)
	}
	path = removeDotSegments(path)
	if path == "" {
		path = "/"
	}
	b.WriteString(path)

	if q := canonicalQuery(u.RawQuery, o.keep); q != "" {
		b.WriteByte('?')
		b.WriteString(q)
	}
	return b.String(), nil
}

// canonicalQuery normalises the escapes of each parameter and sorts them by key, then
// value, then as written. Empty parameters ("a=1&&b=2") are dropped, and so are those
// whose key (escapes normalised) keep, when not nil, refuses.
func canonicalQuery(raw string, keep func(name string) bool) string {
	if raw == "" {
		return ""
	}
	type param struct{ all, key, value string }
	parts := strings.Split(raw, "&")
	params := make([]param, 0, len(parts))
	for _, p := range parts {
		if p == "" {
			continue
		}
		p = NormalizeEscapes(p, queryByte)
		k, v, _ := strings.Cut(p, "=")
		if keep != nil && !keep(k) {
			continue
		}
		params = append(params, param{all: p, key: k, value: v})
	}
	sort.SliceStable(params, func(i, j int) bool {
		a, b := params[i], params[j]
		if a.key != b.key {
			return a.key < b.key
		}
		if a.value != b.value {
			return a.value < b.value
		}
		return a.all < b.all
	})
	var b strings.Builder
	b.Grow(len(raw))
	for i, p := range params {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(p.all)
	}
	return b.String()
}

const upperHex = "0123456789ABCDEF"

// NormalizeEscapes writes s in the one percent-encoded form RFC 3986 compares: escapes
// of unreserved characters decoded, the hex of the others upper-case, a '%' that starts
// no valid escape written %25, and every byte allowed rejects escaped. Canonical URLs and
// the robots.txt matcher (RFC 9309 §2.2.2) use it.
func NormalizeEscapes(s string, allowed func(byte) bool) string {
	if !anyByte(s, func(c byte) bool { return c == '%' || !allowed(c) }) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			d := unhex(s[i+1])<<4 | unhex(s[i+2])
			if unreserved(d) {
				b.WriteByte(d)
			} else {
				b.WriteByte('%')
				b.WriteByte(upperHex[d>>4])
				b.WriteByte(upperHex[d&15])
			}
			i += 2
		case c == '%' || !allowed(c):
			b.WriteByte('%')
			b.WriteByte(upperHex[c>>4])
			b.WriteByte(upperHex[c&15])
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// lowerOutsideEscapes lower-cases the ASCII letters of p except the hex digits of its
// escapes, which NormalizeEscapes writes in upper case.
func lowerOutsideEscapes(p string) string {
	b := []byte(p)
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '%':
			i += 2
		case 'A' <= c && c <= 'Z':
			b[i] = c + ('a' - 'A')
		}
	}
	return string(b)
}

// removeDotSegments resolves "." and ".." segments of an absolute path (RFC 3986 5.2.4).
// Escaped slashes (%2F) are not separators.
func removeDotSegments(p string) string {
	if !strings.Contains(p, ".") {
		return p
	}
	segs := strings.Split(p, "/")
	if segs[0] != "" { // not absolute: leave as is
		return p
	}
	out := make([]string, 0, len(segs))
	last := len(segs) - 1
	for i := 1; i <= last; i++ {
		switch s := segs[i]; s {
		case ".":
			if i == last {
				out = append(out, "")
			}
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
			if i == last {
				out = append(out, "")
			}
		default:
			out = append(out, s)
		}
	}
	return "/" + strings.Join(out, "/")
}

// unreserved reports the characters RFC 3986 never needs escaped: A-Za-z0-9-._~.
func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

// subDelim reports RFC 3986 sub-delims: !$&'()*+,;=.
func subDelim(c byte) bool {
	return strings.IndexByte("!$&'()*+,;=", c) >= 0
}

// pathByte reports bytes that may appear literally in a path.
func pathByte(c byte) bool { return unreserved(c) || subDelim(c) || c == ':' || c == '@' || c == '/' }

// queryByte reports bytes that may appear literally in a query parameter.
func queryByte(c byte) bool { return pathByte(c) || c == '?' }

// anyByte reports whether some byte of s satisfies f: the escaping functions return
// their input as is, without building a copy, when none needs rewriting.
func anyByte(s string, f func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if f(s[i]) {
			return true
		}
	}
	return false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}
