package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// TestStatusSaysWhereTheDedupBytesComeFrom: before any status --deep, status does not
// claim the dedup holds 0 bytes; after one, it gives that look's bytes and time.
func TestStatusSaysWhereTheDedupBytesComeFrom(t *testing.T) {
	t.Parallel()
	oneLine := func(st *inspect.Status) string {
		var b bytes.Buffer
		printStatus(&b, st)
		return strings.Join(strings.Fields(b.String()), " ")
	}
	out := oneLine(&inspect.Status{Crawl: "c", Seen: 301, Counts: map[string]int64{}, Memory: map[string]int64{}})
	for _, want := range []string{"seen 301 urls (bytes in Redis: status --deep measures them)", "dedup (status --deep)"} {
		if !strings.Contains(out, want) {
			t.Errorf("status before a deep look lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "0 bytes in Redis") || strings.Contains(out, "dedup 0.0 MiB") {
		t.Errorf("status before a deep look claims the dedup holds nothing:\n%s", out)
	}
	at := time.Date(2026, 11, 27, 8, 12, 36, 0, time.UTC)
	out = oneLine(&inspect.Status{Crawl: "c", Seen: 301, SeenBytes: 36120, Deep: &inspect.Deep{At: at, SeenBytes: 36120},
		Counts: map[string]int64{}, Memory: map[string]int64{"dedup": 3 << 20}})
	for _, want := range []string{"seen 301 urls (36120 bytes in Redis at 2026-11-27T08:12:36Z, status --deep)", "dedup 3.0 MiB"} {
		if !strings.Contains(out, want) {
			t.Errorf("status after a deep look lacks %q:\n%s", want, out)
		}
	}
}
