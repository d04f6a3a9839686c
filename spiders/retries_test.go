package spiders

import "testing"

// TestMaxRetriesZeroRetriesNone: max_retries: 0 in a spider file means no retries, as a
// reader of the file expects; a spider that does not say gets DefaultMaxRetries; a
// negative value still means none.
func TestMaxRetriesZeroRetriesNone(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		setting string
		want    int
	}{
		{"", DefaultMaxRetries},
		{"\n  max_retries: 0", 0},
		{"\n  max_retries: -1", 0},
		{"\n  max_retries: 7", 7},
	} {
		sp, _, err := Parse("r.yaml", []byte("name: r\nstart_urls: [\"http://example.com/\"]\nsettings:\n  obey_robots: true"+tt.setting+"\n"))
		if err != nil {
			t.Fatalf("%q: %v", tt.setting, err)
		}
		if got := sp.Settings.Retries(); got != tt.want {
			t.Errorf("settings%s: Retries() = %d, want %d", tt.setting, got, tt.want)
		}
	}
	if got := (&Settings{}).Retries(); got != DefaultMaxRetries {
		t.Errorf("zero Settings: Retries() = %d, want %d", got, DefaultMaxRetries)
	}
}
