package spiders

import (
	"fmt"
	"strings"
	"testing"
)

func TestCanonicalURL(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"already canonical", "http://example.com/a?b=1", "http://example.com/a?b=1"},
		{"empty path", "http://example.com", "http://example.com/"},
		{"upper-case scheme and host", "HTTP://Example.COM/Path", "http://example.com/Path"},
		{"default http port", "http://example.com:80/", "http://example.com/"},
		{"default https port", "https://example.com:443/x", "https://example.com/x"},
		{"port 80 on https stays", "https://example.com:80/", "https://example.com:80/"},
		{"port 443 on http stays", "http://example.com:443/", "http://example.com:443/"},
		{"leading zeros in port", "http://example.com:0080/", "http://example.com/"},
		{"empty port", "http://example.com:/", "http://example.com/"},
		{"other port kept", "http://127.0.0.1:8080/p", "http://127.0.0.1:8080/p"},
		{"fragment dropped", "http://example.com/a#frag", "http://example.com/a"},
		{"empty fragment dropped", "http://example.com/a#", "http://example.com/a"},
		{"lone question mark", "http://example.com/a?", "http://example.com/a"},
		{"lone question mark and fragment", "http://example.com/a?#x", "http://example.com/a"},
		{"query sorted by key", "http://example.com/?b=2&a=1", "http://example.com/?a=1&b=2"},
		{"repeated keys sorted by value", "http://example.com/?a=2&b=1&a=1", "http://example.com/?a=1&a=2&b=1"},
		{"blank values kept", "http://example.com/?b=&a", "http://example.com/?a&b="},
		{"empty params dropped", "http://example.com/?a=1&&b=2&", "http://example.com/?a=1&b=2"},
		{"plus kept as written", "http://example.com/?q=a+b", "http://example.com/?q=a+b"},
		{"plus differs from %20", "http://example.com/?q=a%20b", "http://example.com/?q=a%20b"},
		{"space in query escaped", "http://example.com/?q=a b", "http://example.com/?q=a%20b"},
		{"tilde escape decoded", "http://example.com/%7euser", "http://example.com/~user"},
		{"upper-case tilde escape decoded", "http://example.com/%7Euser", "http://example.com/~user"},
		{"unreserved letters decoded", "http://example.com/%41%62%2d%2E%5f", "http://example.com/Ab-._"},
		{"escaped slash stays", "http://example.com/a%2fb", "http://example.com/a%2Fb"},
		{"reserved escapes upper-cased", "http://example.com/a%3a%c3%a9", "http://example.com/a%3A%C3%A9"},
		{"query escapes normalised", "http://example.com/?k%7e=%7e&x=%2f%3d", "http://example.com/?k~=~&x=%2F%3D"},
		{"bad percent in query escaped", "http://example.com/?q=100%", "http://example.com/?q=100%25"},
		{"space in path escaped", "http://example.com/a b", "http://example.com/a%20b"},
		{"non-ascii path escaped", "http://example.com/café", "http://example.com/caf%C3%A9"},
		{"dot segments", "http://example.com/a/./b/../c", "http://example.com/a/c"},
		{"trailing dot-dot", "http://example.com/a/b/..", "http://example.com/a/"},
		{"dot-dot above root", "http://example.com/../../a", "http://example.com/a"},
		{"escaped dots are dot segments", "http://example.com/a/%2e%2E/b", "http://example.com/b"},
		{"dots in names kept", "http://example.com/a.b/..c/.d", "http://example.com/a.b/..c/.d"},
		{"double slash kept", "http://example.com//a//b", "http://example.com//a//b"},
		{"ipv6 with port", "http://[2001:DB8::1]:8080/x", "http://[2001:db8::1]:8080/x"},
		{"ipv6 default port", "https://[::1]:443/", "https://[::1]/"},
		{"ipv6 zone", "http://[fe80::1%25eth0]/", "http://[fe80::1%25eth0]/"},
		{"userinfo kept", "http://User:Pa%73s@Example.com:80/", "http://User:Pass@example.com/"},
		{"idn host in ascii", "http://BÜCHER.example/", "http://xn--bcher-kva.example/"},
		{"punycode host as it is", "http://XN--BCHER-KVA.example./", "http://xn--bcher-kva.example/"},
		{"port zeros", "http://xn--bcher-kva.example:08520/", "http://xn--bcher-kva.example:8520/"},
		{"surrounding spaces", "  http://example.com/a  ", "http://example.com/a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CanonicalURL(tt.in)
			if err != nil {
				t.Fatalf("CanonicalURL(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("CanonicalURL(%q) (-want +got):\n-%s\n+%s", tt.in, tt.want, got)
			}
			again, err := CanonicalURL(got)
			if err != nil || again != got {
				t.Errorf("CanonicalURL not idempotent on %q: %q, %v", got, again, err)
			}
		})
	}
}

func TestCanonicalURLErrors(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"", "scheme"},
		{"/relative/path", "scheme"},
		{"example.com/a", "scheme"},
		{"ftp://example.com/", "scheme \"ftp\""},
		{"mailto:a@example.com", "scheme \"mailto\""},
		{"http:///path", "no host"},
		{"http:opaque", "no host"},
		{"http://exa mple.com/", "invalid character"},
		{"http://example.com:99999/", "invalid port"},
		{"http://example.com:x/", "invalid port"},
		{"http://example.com/%zz", "invalid URL escape"},
		{"http://[::1/", "missing ']'"},
	}
	for _, tt := range tests {
		_, err := CanonicalURL(tt.in)
		if err == nil {
			t.Errorf("CanonicalURL(%q): no error, want one containing %q", tt.in, tt.want)
			continue
		}
		if !strings.HasPrefix(err.Error(), "spiders: ") || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("CanonicalURL(%q) error (-want +got):\n-spiders: ...%s...\n+%v", tt.in, tt.want, err)
		}
	}
}

func ExampleCanonicalURL() {
	u, _ := CanonicalURL("HTTP://Shop.Example:80/a/./b/../%7ec?z=1&a=&y#top")
	fmt.Println(u)
	// Output: http://shop.example/a/~c?a=&y&z=1
}

// TestLowercasePathDecodesEscapesFirst: with lowercase_path, an escaped capital letter
// (/d/p%41ge) is decoded before the path is lower-cased, so it is /d/page; the hex of
// an escape that stays (%2F, a reserved byte) is upper case and the byte it stands for
// is not changed.
func TestLowercasePathDecodesEscapesFirst(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"http://h.example/d/p%41ge", "http://h.example/d/page"},
		{"http://h.example/d/page", "http://h.example/d/page"},
		{"http://h.example/D/P%61GE", "http://h.example/d/page"},
		{"http://h.example/a%2fB%c3%A9?Q=X", "http://h.example/a%2Fb%C3%A9?Q=X"},
		{"http://h.example/%7Euser/%4A", "http://h.example/~user/j"},
	} {
		got, err := canonicalURL(tt.in, canonOpts{lowerPath: true})
		if err != nil || got != tt.want {
			t.Errorf("canonicalURL(%q, lowerPath) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}
