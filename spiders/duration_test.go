package spiders

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	good := []struct {
		in   string
		want time.Duration
	}{
		{"0", 0},
		{"30s", 30 * time.Second},
		{"200ms", 200 * time.Millisecond},
		{"1h30m", 90 * time.Minute},
		{"336h", 14 * day},
		{"14d", 14 * day},
		{"1d", 24 * time.Hour},
		{"1d12h", 36 * time.Hour},
		{"1.5d", 36 * time.Hour},
		{".5d", 12 * time.Hour},
		{"2d30m15s", 2*day + 30*time.Minute + 15*time.Second},
		{"1h1d", 25 * time.Hour},
		{"-1d", -day},
		{"+2d", 2 * day},
		{"0d", 0},
		{"106751d", 106751 * day},
	}
	for _, tt := range good {
		got, err := parseDuration(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("parseDuration(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []string{"", "3x", "d", "1.2.3d", "14", "1d12", "14days", "1 d", "-", "1e3d", "999999999d", "106751d24h", "1dd"} {
		if got, err := parseDuration(in); err == nil {
			t.Errorf("parseDuration(%q) = %v, want an error", in, got)
		}
	}
}

// TestYAMLDurationsInDays: every duration a YAML spider takes reads days, at every depth
// of settings (a setting, a revisit rule, a limit's delay, a retention's max_age).
func TestYAMLDurationsInDays(t *testing.T) {
	src := `name: shop
start_urls: ["http://example.com/"]
settings:
  download_timeout: 1d
  proxy_ban_for: 1d12h
  revisit:
    rules:
      - {match: '/news/', min: 10m, max: 14d, start: 1.5d}
    forget_after: 30d
  limits:
    - {domain: "*.example.com", delay: 0.5d}
  retention:
    items: {max_age: 7d}
`
	sp, _, err := Parse("shop.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	s := sp.Settings
	got := fmt.Sprint(s.DownloadTimeout, s.ProxyBanFor, s.Revisit.Rules[0].Max, s.Revisit.Rules[0].Start, s.Revisit.ForgetAfter, s.Limits[0].Delay, s.Retention["items"].MaxAge)
	want := fmt.Sprint(24*time.Hour, 36*time.Hour, 336*time.Hour, 36*time.Hour, 720*time.Hour, 12*time.Hour, 168*time.Hour)
	if got != want {
		t.Errorf("durations (-want +got):\n-%s\n+%s", want, got)
	}
}

// TestYAMLBadDurations: a duration that does not parse is an error at its key's line
// that says what a duration looks like.
func TestYAMLBadDurations(t *testing.T) {
	head := "name: shop\nstart_urls: [\"http://example.com/\"]\nsettings:\n"
	tests := []struct {
		src, key, value string
		line            int
	}{
		{"  download_timeout: 3x\n", "settings.download_timeout", "3x", 4},
		{"  user_agent: x\n  proxy_ban_for: 14days\n", "settings.proxy_ban_for", "14days", 5},
		{"  revisit:\n    rules:\n      - match: /\n        min: 1m\n        max: 1.d.5\n", "settings.revisit.rules[0].max", "1.d.5", 8},
		{"  revisit:\n    - match: /\n      min: 1m\n      max: 1.d.5\n", "settings.revisit[0].max", "1.d.5", 7},
		{"  revisit:\n    after: 1d\n    forget_after: 30 days\n", "settings.revisit.forget_after", "30 days", 6},
		{"  revisit_after: 1dd\n", "settings.revisit_after", "1dd", 4},
		{"  limits:\n    - delay: 1d12\n", "settings.limits[0].delay", "1d12", 5},
		{"  retention:\n    items:\n      max_age: d\n", "settings.retention.items.max_age", "d", 6},
	}
	for _, tt := range tests {
		_, _, err := Parse("shop.yaml", []byte(head+tt.src))
		var se *SpecError
		if !errors.As(err, &se) {
			t.Errorf("%s: error %v, want a *SpecError", tt.key, err)
			continue
		}
		want := fmt.Sprintf(`spiders: shop.yaml:%d: %s: invalid duration %q: want a duration like "30s", "200ms" or "14d"`, tt.line, tt.key, tt.value)
		if got := err.Error(); got != want || se.Line != tt.line {
			t.Errorf("error (-want +got):\n-%s\n+%s", want, got)
		}
	}
	if _, _, err := Parse("shop.yaml", []byte(head+"  download_timeout: 14\n")); err == nil || !strings.Contains(err.Error(), `want a duration like "30s" or "14d", got an integer`) {
		t.Errorf("download_timeout: 14: error %v, want one asking for a duration", err)
	}
}
