package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchBroadRecordFeedsPlots: bench-broad --record on a tiny broad web writes a
// record that plots draws politeness.svg from.
func TestBenchBroadRecordFeedsPlots(t *testing.T) {
	t.Setenv(mainEnv, "1") // the worker processes are this test binary run as the command
	data, out := t.TempDir(), t.TempDir()
	code, stdout, stderr := run("bench-broad", "--hosts", "3", "--pages", "4", "--delay", "100ms", "--latency", "5ms",
		"--fetchers", "1", "--timeout", "50s", "--log-level", "error", "--record", filepath.Join(data, "broad-h3.json"))
	if code != 0 {
		t.Fatalf("bench-broad: exit %d\n%s\n%s", code, stdout, stderr)
	}
	recs, err := readRecords(data)
	if err != nil || len(recs) != 1 || recs[0].Broad == nil {
		t.Fatalf("records %+v, %v; want one bench-broad record", recs, err)
	}
	b := recs[0].Broad
	if b.Hosts != 3 || b.Pages != 12 || b.SpanOverLimit <= 0 || b.MedianGapOverDelay <= 0 || b.DelayS != 0.1 {
		t.Errorf("record %+v: want 3 hosts, 12 pages, a span ÷ limit and a median gap ÷ delay", b)
	}
	code, stdout, stderr = run("plots", "--data", data, "--out", out)
	if code != 0 || !strings.Contains(stdout, politenessSVG+" from 1 bench-broad runs") {
		t.Fatalf("plots: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if text := svgText(t, filepath.Join(out, politenessSVG)); !strings.Contains(text, "span ÷ limit") {
		t.Errorf("politeness.svg lacks its series:\n%s", text)
	}
}
