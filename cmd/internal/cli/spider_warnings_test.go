package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestLoadSpiderWarnsDeprecatedKeys: a spider file with a deprecated key loads, and the
// command logs the key's warning at WARN once: when it loads the file, not again when
// the crawl starts (handlers.Crawl logs Spider.Warnings).
func TestLoadSpiderWarnsDeprecatedKeys(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	spider := writeFile(t, "old.yaml", "name: oldkeys\nstart_urls: [http://127.0.0.1:1/]\nsettings:\n  revisit_after: 1d\n  max_retries: -1\n")
	out := filepath.Join(t.TempDir(), "items.jsonl")
	want := spider + ":4: settings.revisit_after is deprecated: write settings.revisit.after"
	for _, tt := range []struct {
		args []string
		then string // what shows the command went on past loading the file
	}{
		{[]string{"crawl", spider, "--redis", srv.URL(), "--out", out}, "crawl done"},
		{[]string{"seed", "--redis", "redis://" + closedPort(t) + "/0", "--spider", spider}, "cannot reach redis"},
	} {
		_, _, stderr := runCLI(t, crawlTimeout, nil, tt.args...)
		if n := strings.Count(stderr, want); n != 1 || !strings.Contains(stderr, "WARN") {
			t.Errorf("%s: the warning %d times in stderr, want once at WARN:\n%s", tt.args[0], n, tail(stderr, 4<<10))
		}
		if !strings.Contains(stderr, tt.then) {
			t.Errorf("%s: stderr without %q:\n%s", tt.args[0], tt.then, tail(stderr, 4<<10))
		}
	}
}
