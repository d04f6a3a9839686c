package spiders

import (
	"testing"
	"time"
)

func TestRetentionFromYAML(t *testing.T) {
	src := "name: shop\nstart_urls: [http://example.com/]\nsettings:\n  retention:\n" +
		"    responses: {max_age: 10m, max_bytes: 256MB}\n    items: {max_bytes: 1048576}\n"
	sp, _, err := Parse("shop.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	got := sp.Settings.EffectiveRetention()
	want := map[string]StreamRetention{
		"requests":  {},
		"responses": {MaxAge: 10 * time.Minute, MaxBytes: 256 << 20},
		"items":     {MaxBytes: 1 << 20},
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("retention %s (-want +got):\n-%+v\n+%+v", k, w, got[k])
		}
	}
	if s := got["responses"].String(); s != "max_age=10m0s max_bytes=256MB" {
		t.Errorf("String() = %q", s)
	}
	if s := got["requests"].String(); s != "until acked" {
		t.Errorf("String() = %q", s)
	}
}

func TestParseByteSize(t *testing.T) {
	for in, want := range map[string]ByteSize{"4096": 4096, "64MB": 64 << 20, "64mib": 64 << 20, "1.5GB": 3 << 29,
		"512 KB": 512 << 10, "10B": 10, "2TB": 2 << 40} {
		if got, err := ParseByteSize(in); err != nil || got != want {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MB", "-1MB", "12XB", "1e3", "1.2.3KB"} {
		if got, err := ParseByteSize(in); err == nil {
			t.Errorf("ParseByteSize(%q) = %d, want an error", in, got)
		}
	}
}
