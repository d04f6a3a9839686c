package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFiguresQuickBroadThenPlots: figures --quick with peers and memory skipped runs
// bench-broad at two host counts with --record, draws politeness.svg from them and says
// how long each part took.
func TestFiguresQuickBroadThenPlots(t *testing.T) {
	t.Setenv(mainEnv, "1") // the worker processes are this test binary run as the command
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	code, stdout, stderr := run("figures", "--quick", "--skip", "peers,memory", "--data", data, "--out", dir)
	if code != 0 {
		t.Fatalf("figures: exit %d\n%s\n%s", code, stdout, stderr)
	}
	recs, err := readRecords(data)
	if err != nil || len(recs) != 2 || recs[0].Broad == nil || recs[1].Broad == nil {
		t.Fatalf("records %+v, %v; want two bench-broad records", recs, err)
	}
	if _, err := os.Stat(filepath.Join(dir, politenessSVG)); err != nil {
		t.Errorf("no %s: %v\n%s", politenessSVG, err, stdout)
	}
	for _, want := range []string{"figures: broad took ", "figures: plots took ", "figures: done in "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "streamcrawl-bench bench-peers") || strings.Contains(stdout, "streamcrawl-bench bench-memory") {
		t.Errorf("a skipped part ran:\n%s", stdout)
	}
}

func TestFiguresRejectsAnUnknownPart(t *testing.T) {
	if code, _, stderr := run("figures", "--skip", "pears"); code == 0 || !strings.Contains(stderr, `--skip "pears"`) {
		t.Errorf("figures --skip pears: exit %d, stderr %q; want an error naming it", code, stderr)
	}
}
