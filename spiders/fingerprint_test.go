package spiders

import (
	"crypto/sha256"
	"strings"
	"testing"
)

func TestFingerprintEquivalentURLs(t *testing.T) {
	pairs := [][2]string{
		{"http://example.com", "HTTP://EXAMPLE.com:80/"},
		{"http://example.com/a?b=2&a=1", "http://example.com/a?a=1&b=2#x"},
		{"http://example.com/%7efoo", "http://example.com/~foo"},
		{"http://example.com/a/../b", "http://example.com/b?"},
	}
	for _, p := range pairs {
		a, err := Fingerprint("get", p[0], nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Fingerprint("GET", p[1], nil)
		if err != nil {
			t.Fatal(err)
		}
		if a != b {
			t.Errorf("Fingerprint(%q) != Fingerprint(%q)", p[0], p[1])
		}
	}
}

func TestFingerprintDistinguishes(t *testing.T) {
	base, err := Fingerprint("GET", "http://example.com/a", nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, method, url string
		body              []byte
	}{
		{"method", "POST", "http://example.com/a", nil},
		{"body", "GET", "http://example.com/a", []byte("x")},
		{"path", "GET", "http://example.com/b", nil},
		{"escaped slash", "GET", "http://example.com/a%2F", nil},
		{"query plus", "GET", "http://example.com/a?q=+", nil},
		{"scheme", "GET", "https://example.com/a", nil},
	}
	for _, tt := range tests {
		got, err := Fingerprint(tt.method, tt.url, tt.body)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got == base {
			t.Errorf("%s: fingerprint of %s %s %q equals that of GET http://example.com/a", tt.name, tt.method, tt.url, tt.body)
		}
	}
}

func TestFingerprintLayout(t *testing.T) {
	got, err := Fingerprint("post", "http://Example.com:80", []byte("k=v"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("POST\x00http://example.com/\x00k=v"))
	var want [FingerprintSize]byte
	copy(want[:], sum[:])
	if got != want {
		t.Errorf("Fingerprint (-want +got):\n-%x\n+%x", want, got)
	}
}

func TestFingerprintErrors(t *testing.T) {
	for _, u := range []string{"", "ftp://example.com/", "http:///x", "http://example.com/%zz"} {
		if _, err := Fingerprint("GET", u, nil); err == nil {
			t.Errorf("Fingerprint(%q): no error", u)
		}
	}
}

func TestRequestFingerprint(t *testing.T) {
	a, err := (&Request{URL: "http://example.com/?b=1&a=2"}).Fingerprint()
	if err != nil {
		t.Fatal(err)
	}
	b, err := (&Request{URL: "http://EXAMPLE.com/?a=2&b=1", Method: "get"}).Fingerprint()
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Errorf("equivalent requests have different fingerprints: %x, %x", a, b)
	}
}

func BenchmarkFingerprint(b *testing.B) {
	const u = "https://Shop.Example.com:443/catalog/./items/../p/12345?sort=price&page=2&q=red%7eshoes#reviews"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Fingerprint("GET", u, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// TestFingerprintOfIsTheLayoutHashed: fingerprintOf's summing of the bytes at once gives
// the bytes that hashing the layout piece by piece gives (fingerprints are in Redis:
// they must not change between builds), for lower- and mixed-case methods, a method
// outside ASCII, and bodies that do not fit the stack buffer.
func TestFingerprintOfIsTheLayoutHashed(t *testing.T) {
	long := make([]byte, 2000)
	for i := range long {
		long[i] = byte(i)
	}
	for _, tc := range []struct {
		method, canon string
		body          []byte
	}{
		{"GET", "http://example.com/", nil},
		{"get", "http://example.com/a?b=1", nil},
		{"Post", "http://example.com/form", []byte("a=1&b=2")},
		{"PATCH", "http://example.com/" + string(long[:600]), long},
		{"gét", "http://example.com/", []byte("x")},
		{"", "http://example.com/", nil},
	} {
		h := sha256.New()
		h.Write([]byte(strings.ToUpper(tc.method)))
		h.Write([]byte{0})
		h.Write([]byte(tc.canon))
		h.Write([]byte{0})
		h.Write(tc.body)
		want := h.Sum(nil)[:FingerprintSize]
		got := fingerprintOf(tc.method, tc.canon, tc.body, nil)
		if string(got[:]) != string(want) {
			t.Errorf("%q %q (%d body bytes): %x, want %x", tc.method, tc.canon, len(tc.body), got, want)
		}
	}
}
