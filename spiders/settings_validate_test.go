package spiders

import (
	"testing"
	"time"
)

// A negative setting is named by its path under settings, with its value as written:
// sizes in bytes, durations as durations.
func TestValidateNamesANegativeSetting(t *testing.T) {
	for _, c := range []struct {
		s    Settings
		want string
	}{
		{Settings{MaxPages: -3}, "spiders: settings.max_pages -3 is negative"},
		{Settings{MaxItemSize: -1 << 20}, "spiders: settings.max_item_size -1048576 is negative"},
		{Settings{PerHostDelay: -1500 * time.Millisecond}, "spiders: settings.per_host_delay -1.5s is negative"},
		{Settings{Budget: Budget{BytesPerHost: -1}}, "spiders: settings.budget.bytes_per_host -1 is negative"},
		{Settings{Retention: map[string]StreamRetention{"items": {MaxAge: -time.Second}}},
			"spiders: settings.retention.items.max_age -1s is negative"},
	} {
		err := c.s.Validate()
		if err == nil || err.Error() != c.want {
			t.Errorf("Validate() = %v, want %q", err, c.want)
		}
	}
}

// settings.response_compression takes the five values and "".
func TestResponseCompressionSetting(t *testing.T) {
	t.Parallel()
	for c, ok := range map[string]bool{"": true, "s2": true, "fastest": true, "default": true, "better": true, "off": true, "fast": false, "9": false} {
		s := Settings{ResponseCompression: c}
		s.SetDefaults()
		if err := s.Validate(); (err == nil) != ok {
			t.Fatalf("response_compression %q: %v, want valid %v", c, err, ok)
		}
	}
}
