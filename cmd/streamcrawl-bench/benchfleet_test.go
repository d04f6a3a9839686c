package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestBenchFleet runs bench fleet's four scenarios at tiny sizes with real worker
// processes (this test binary run as the command) on a real redis-server: the sites
// scenario's crawls store exactly their sites' items and fetch every page once, and the
// other scenarios print their tables. The speed and cost thresholds are lifted (no timed
// assertions in a test), but memory's is set below any RSS to see that a failed check
// fails the command and is named with its scenario alone.
func TestBenchFleet(t *testing.T) {
	t.Setenv(mainEnv, "1") // the workers are this test binary run as the command
	code, out, errOut := run("fleet", "--sites", "3", "--pages", "150", "--big", "5000", "--small", "100",
		"--crawls", "4", "--memory-pages", "60", "--cost-pages", "200",
		"--max-ratio", "1000", "--max-cost-ratio", "1000", "--max-growth", "0.01", "--log-level", "error")
	if code == 0 {
		t.Errorf("bench fleet: exit 0 with --max-growth 0.01; want the memory check to fail it\n%s", out)
	}
	for _, s := range []string{"sites", "fair", "cost"} {
		if strings.Contains(out, "FAIL "+s) {
			t.Errorf("scenario %s failed:\n%s\n%s", s, out, errOut)
		}
	}
	if !strings.Contains(out, "FAIL memory: worker fp-1") {
		t.Errorf("no memory failure for worker fp-1 in the output:\n%s\n%s", out, errOut)
	}
	for _, h := range []string{"| never fetched |", "| beside the big one |", "| last / first |", "| crawl --redis alone |"} {
		if !strings.Contains(out, h) {
			t.Errorf("no %q in the output:\n%s", h, out)
		}
	}
	m := regexp.MustCompile(`all 3 crawls: (\d+) pages, (\d+) items`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no sites summary in the output:\n%s", out)
	}
	pages, _ := strconv.Atoi(m[1])
	items, _ := strconv.Atoi(m[2])
	if pages < 3*130 || items < 3*100 {
		t.Errorf("sites: %d pages, %d items; want about 3x143 pages and 3x113 items:\n%s", pages, items, out)
	}
}
