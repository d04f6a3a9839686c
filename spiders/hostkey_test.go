package spiders

import (
	"net/url"
	"testing"
)

// TestHostKey: one key per host whatever way a URL writes it, and a different key where
// the host differs (another port, another scheme's default port).
func TestHostKey(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"http://shop.example/a", "shop.example"},
		{"HTTP://Shop.EXAMPLE/a", "shop.example"},
		{"http://shop.example./a", "shop.example"},        // trailing dot
		{"http://shop.example:80/a", "shop.example"},      // http's own port
		{"https://shop.example:443/a", "shop.example"},    // https's own port
		{"https://shop.example:80/a", "shop.example:80"},  // not https's port: another host
		{"http://shop.example:443/a", "shop.example:443"}, // not http's port
		{"http://shop.example:08520/a", "shop.example:8520"},
		{"http://shop.example:0080/a", "shop.example"}, // 80 with leading zeros
		{"http://shop.example:0/a", "shop.example:0"},
		{"http://shop.example:/a", "shop.example"}, // empty port
		{"http://user:pw@shop.example:8080/a", "shop.example:8080"},
		{"http://shop.example?q=1", "shop.example"},
		{"http://shop.example#top", "shop.example"},
		{"http://Bücher.Example/", "xn--bcher-kva.example"}, // IDNA
		{"http://xn--BCHER-kva.example./", "xn--bcher-kva.example"},
		{"http://b%C3%BCcher.example/", "xn--bcher-kva.example"}, // escaped as net/url reads it
		{"http://[2001:DB8::1]/", "[2001:db8::1]"},
		{"http://[fe80::1%25eth0]:8080/", "[fe80::1%25eth0]:8080"}, // zone
		{"http://[2001:db8::1]:80/", "[2001:db8::1]"},
		{"https://[::1]:8443/", "[::1]:8443"},
		{"http://127.0.0.1:8080/", "127.0.0.1:8080"},
		{"http://my_host.example/", "my_host.example"},  // IDNA would refuse it: kept, lower-cased
		{"ftp://Files.Example:21/", "files.example:21"}, // no default port known for ftp
		{"/relative/path", ""},
		{"http:///nohost", ""},
	} {
		if got := HostKey(tc.url); got != tc.want {
			t.Errorf("HostKey(%q) = %q, want %q", tc.url, got, tc.want)
		}
		if u, err := url.Parse(tc.url); err == nil {
			if got := HostKeyOf(u); got != tc.want {
				t.Errorf("HostKeyOf(%q) = %q, want %q (as HostKey)", tc.url, got, tc.want)
			}
		}
	}
}

func TestHostKeyName(t *testing.T) {
	for key, want := range map[string]string{
		"shop.example": "shop.example", "shop.example:8080": "shop.example",
		"[2001:db8::1]": "2001:db8::1", "[::1]:8443": "::1", "xn--bcher-kva.example": "xn--bcher-kva.example",
	} {
		if got := HostKeyName(key); got != want {
			t.Errorf("HostKeyName(%q) = %q, want %q", key, got, want)
		}
	}
}

// The key of a host that is already a key is itself: callers may pass keys on.
func TestHostKeyIsStable(t *testing.T) {
	for _, raw := range []string{"HTTP://Shop.Example.:0080/", "https://[::1]:8443/", "http://Bücher.example/", "https://a.example:80/"} {
		k := HostKey(raw)
		scheme := raw[:len("http")]
		if raw[4] == 's' {
			scheme = "https"
		}
		if again := HostKey(scheme + "://" + k + "/"); again != k {
			t.Errorf("HostKey of %q's key %q = %q", raw, k, again)
		}
	}
}

func BenchmarkHostKey(b *testing.B) {
	for range b.N {
		_ = HostKey("http://127.0.0.1:8080/catalogue/page-17.html?sort=price")
	}
}
