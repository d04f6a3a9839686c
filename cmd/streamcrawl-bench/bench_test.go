package main

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestBenchReportsDedupBytes: bench reads the dedup's bytes with a deep look at the end
// (status's counters do not hold them), so its bytes per seen URL is a real figure:
// a few hundred pages of the demo shop take a few dozen bytes a URL in exact mode.
func TestBenchReportsDedupBytes(t *testing.T) {
	t.Setenv(mainEnv, "1") // the demo shop's child is this test binary run as the command
	srv := streamstest.Start(t)
	code, out, errOut := run("bench", "--pages", "300", "--redis", srv.URL(), "--log-level", "error")
	if code != 0 {
		t.Fatalf("bench: exit %d\n%s\n%s", code, out, errOut)
	}
	m := regexp.MustCompile(`Redis bytes per seen URL +([0-9.]+) \(dedup: (\d+) bytes for (\d+) URLs\)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no bytes per seen URL line:\n%s", out)
	}
	per, _ := strconv.ParseFloat(m[1], 64)
	bytes, _ := strconv.Atoi(m[2])
	urls, _ := strconv.Atoi(m[3])
	if urls < 250 || bytes <= 0 || per < 1 || per > 1000 {
		t.Fatalf("%.1f bytes per seen URL (%d bytes for %d URLs), want 1..1000 for at least 250 URLs\n%s", per, bytes, urls, out)
	}
}
