package cli

import (
	"strings"
	"testing"
)

// TestRedisURLWithoutSchemeSuggestsTheURLMeant: a --redis URL whose scheme lost its
// colon or slashes is answered with that URL mended, not with redis:// put before the
// broken one; a bare host:port gets redis:// in front; a password is never shown.
func TestRedisURLWithoutSchemeSuggestsTheURLMeant(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ given, shown, suggested string }{
		{"redis//127.0.0.1:7101", "redis//127.0.0.1:7101", "redis://127.0.0.1:7101"},
		{"redis:/127.0.0.1:7101/0", "redis:/127.0.0.1:7101/0", "redis://127.0.0.1:7101/0"},
		{"rediss//cache.example:6380", "rediss//cache.example:6380", "rediss://cache.example:6380"},
		{"redis+cluster//10.0.0.1:7000,10.0.0.2:7000", "redis+cluster//10.0.0.1:7000,10.0.0.2:7000", "redis+cluster://10.0.0.1:7000,10.0.0.2:7000"},
		{"127.0.0.1:6379", "127.0.0.1:6379", "redis://127.0.0.1:6379"},
		{"redis:6379", "redis:6379", "redis://redis:6379"}, // a host named redis (Compose)
		{"redis//:s3cret@127.0.0.1:7101", "redis//***@127.0.0.1:7101", "redis://***@127.0.0.1:7101"},
		{"user:s3cret@127.0.0.1:6379", "***@127.0.0.1:6379", "redis://***@127.0.0.1:6379"},
	} {
		code, _, stderr := runInProcess("status", "--redis", tt.given, "--crawl", "shop")
		want := `streamcrawl: streams: redis url "` + tt.shown + `" has no scheme: use ` + tt.suggested +
			" (rediss:// for TLS, redis+cluster:// for a cluster)\n"
		if code != 1 || stderr != want || strings.Contains(stderr, "s3cret") {
			t.Errorf("--redis %s: exit %d, stderr (-want +got):\n-%s+%s", tt.given, code, want, stderr)
		}
	}
}
