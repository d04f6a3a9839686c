package spiders

import (
	"net/url"
	"testing"
)

// TestWireURLEncodesAsBrowsers: spaces, quotes, '<', '>' and non-ASCII bytes in a
// path and query go out percent-encoded (WHATWG URL), escapes already written stay as
// they are, and the fragment is not sent.
func TestWireURLEncodesAsBrowsers(t *testing.T) {
	for raw, want := range map[string]string{
		`http://h/a b?q=red shoes`:        `http://h/a%20b?q=red%20shoes`,
		`http://h/s?q="x"&t='y'`:          `http://h/s?q=%22x%22&t=%27y%27`,
		"http://h/s?z=\u00fc&c=<b>":       `http://h/s?z=%C3%BC&c=%3Cb%3E`,
		"http://h/caf\u00e9/x":            `http://h/caf%C3%A9/x`,
		`http://h/p?x=%20y&a=b#frag`:      `http://h/p?x=%20y&a=b`,
		`http://h?x=1`:                    `http://h/?x=1`,
		"http://BÜCHER.test:080/x":        `http://xn--bcher-kva.test/x`,
		`http://h.test:08520/x`:           `http://h.test:8520/x`,
		`http://user:pw@h/p?q=a b`:        `http://user:pw@h/p?q=a%20b`,
		`https://h/already%20encoded?a=1`: `https://h/already%20encoded?a=1`,
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		if got := WireURL(u); got != want {
			t.Errorf("WireURL(%q) = %q, want %q", raw, got, want)
		}
	}
}

// TestRedactedURLDropsCredentials: user info never survives; URLs without it, and an
// '@' in a path, are left alone.
func TestRedactedURLDropsCredentials(t *testing.T) {
	for raw, want := range map[string]string{
		"http://user:secret@h/p?q=1": "http://h/p?q=1",
		"http://token@h/p":           "http://h/p",
		"http://h/@someone":          "http://h/@someone",
		"http://h/p":                 "http://h/p",
		"http://u:s@h/%zz":           "http://h/%zz",
	} {
		if got := RedactedURL(raw); got != want {
			t.Errorf("RedactedURL(%q) = %q, want %q", raw, got, want)
		}
	}
}
