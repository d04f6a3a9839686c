package spiders

import (
	"strings"
	"testing"
)

func TestScopeAllows(t *testing.T) {
	shop, err := NewScope([]string{"Example.com", "127.0.0.1", "[::1]", "docs.other.org."}, 2)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		scope  *Scope
		url    string
		depth  int
		ok     bool
		reason string
	}{
		{"domain", shop, "http://example.com/", 0, true, ""},
		{"domain any case and port", shop, "https://EXAMPLE.com:8443/x", 0, true, ""},
		{"subdomain", shop, "http://www.shop.example.com/", 0, true, ""},
		{"trailing dot host", shop, "http://example.com./", 0, true, ""},
		{"suffix that is not a subdomain", shop, "http://badexample.com/", 0, false, DropOffsite},
		{"parent of allowed domain", shop, "http://other.org/", 0, false, DropOffsite},
		{"allowed subdomain", shop, "http://docs.other.org/", 0, true, ""},
		{"ip with port", shop, "http://127.0.0.1:8080/", 0, true, ""},
		{"other ip", shop, "http://127.0.0.2/", 0, false, DropOffsite},
		{"ipv6", shop, "http://[::1]:9000/", 0, true, ""},
		{"offsite", shop, "http://example.org/", 0, false, DropOffsite},
		{"ftp", shop, "ftp://example.com/", 0, false, DropScheme},
		{"mailto", shop, "mailto:me@example.com", 0, false, DropScheme},
		{"malformed", shop, "http://example.com/%zz", 0, false, DropInvalid},
		{"no host", shop, "http:///x", 0, false, DropInvalid},
		{"at max depth", shop, "http://example.com/", 2, true, ""},
		{"too deep", shop, "http://example.com/", 3, false, DropDepth},
		{"offsite wins over depth", shop, "http://example.org/", 3, false, DropOffsite},
		{"empty list allows all", mustScope(t, nil, 0), "http://anything.test/", 99, true, ""},
		{"nil scope allows http", nil, "http://anything.test/", 99, true, ""},
		{"nil scope drops ftp", nil, "ftp://anything.test/", 0, false, DropScheme},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, reason := tt.scope.Allows(&Request{URL: tt.url, Depth: tt.depth})
			if ok != tt.ok || reason != tt.reason {
				t.Errorf("Allows(%s depth %d) (-want +got):\n-%v %q\n+%v %q", tt.url, tt.depth, tt.ok, tt.reason, ok, reason)
			}
		})
	}
	if ok, reason := shop.Allows(nil); ok || reason != DropInvalid {
		t.Errorf("Allows(nil) = %v, %q; want false, %q", ok, reason, DropInvalid)
	}
}

func mustScope(t *testing.T, domains []string, depth int) *Scope {
	t.Helper()
	s, err := NewScope(domains, depth)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNewScopeErrors(t *testing.T) {
	tests := []struct {
		domains []string
		depth   int
		want    string
	}{
		{[]string{""}, 0, "is empty"},
		{[]string{"http://example.com"}, 0, "not a url"},
		{[]string{"example.com/path"}, 0, "not a url"},
		{[]string{"example.com:8080"}, 0, "without scheme or port"},
		{nil, -1, "negative"},
	}
	for _, tt := range tests {
		_, err := NewScope(tt.domains, tt.depth)
		if err == nil || !strings.HasPrefix(err.Error(), "spiders: ") || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("NewScope(%q, %d) error (-want +got):\n-spiders: ...%s...\n+%v", tt.domains, tt.depth, tt.want, err)
		}
	}
}

func TestSpiderScope(t *testing.T) {
	sp := &Spider{AllowedDomains: []string{"example.com"}, Settings: Settings{MaxDepth: 1}}
	s, err := sp.Scope()
	if err != nil {
		t.Fatal(err)
	}
	if ok, reason := s.Allows(&Request{URL: "http://example.com/", Depth: 2}); ok || reason != DropDepth {
		t.Errorf("Allows = %v, %q; want false, %q", ok, reason, DropDepth)
	}
}
