package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// raceChildTests are the tests whose worker processes run under the race detector when
// the tests do (a copy of this test binary built with -race): the multi-process crawls,
// which run every stage of the product in several processes at once. The other tests'
// processes (failovers, kills, restarts, archives: what they prove is what is lost or
// kept, which the race detector does not judge) run a copy of this test binary built
// without it, which costs a few times less CPU: on the 2-core machine the race
// detector's CPU in those worker processes was what kept the test command long. Set
// STREAMCRAWL_RACE_CHILDREN=1 to run every worker under the race detector.
//
// The fault tests (failovers, FLUSHALL, a browser killed mid-render) set the moment of
// their fault by the pages their site served (a gate holds the rest: gate_test.go), not
// by the workers' pace, and check that it landed mid-crawl; so they run without the race
// detector's pace too.
var raceChildTests = []string{
	"TestMultiProcessCrawlDemoSite",
	"TestMultiProcessCrawl20kSiteTest",
	"TestMultiProcessCrawlObeysRobotsTxt",
	"TestMultiProcessCrawlOnRedisCluster",
}

// plainBinary is this test binary built without the race detector ("" when the tests
// run without it, or every child should run under it).
var plainBinary string

// buildPlainBinary builds plainBinary into dir when the tests run under the race
// detector (go test -c of this package, a few seconds with the build cache of
// `go build ./cmd/streamcrawl`).
func buildPlainBinary(dir string) error {
	if !raceEnabled || os.Getenv("STREAMCRAWL_RACE_CHILDREN") == "1" {
		return nil
	}
	out := filepath.Join(dir, "cli-plain.test")
	cmd := exec.Command("go", "test", "-c", "-o", out, ".")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build the worker binary without -race: %v\n%s", err, b)
	}
	plainBinary = out
	return nil
}

// childBinary is the binary t's worker processes run (see raceChildTests).
func childBinary(t testing.TB) string {
	if plainBinary == "" || slices.Contains(raceChildTests, topTest(t.Name())) {
		return os.Args[0]
	}
	return plainBinary
}

// topTest is the top-level test of a (sub)test name.
func topTest(name string) string {
	top, _, _ := strings.Cut(name, "/")
	return top
}

// TestChildBinaryFollowsRaceChildTests: under the race detector the multi-process crawls'
// workers run this very binary and the others a copy without the race detector.
func TestChildBinaryFollowsRaceChildTests(t *testing.T) {
	t.Parallel()
	if got := childBinary(t); raceEnabled && os.Getenv("STREAMCRAWL_RACE_CHILDREN") != "1" && got == os.Args[0] {
		t.Errorf("under -race, %s's workers run the race-enabled binary %s", t.Name(), got)
	}
	if got := childBinary(fakeName{t, "TestMultiProcessCrawlDemoSite/sub"}); got != os.Args[0] {
		t.Errorf("TestMultiProcessCrawlDemoSite's workers run %s, want this binary", got)
	}
}

// fakeName is a testing.TB answering another test's name.
type fakeName struct {
	testing.TB
	name string
}

func (f fakeName) Name() string { return f.name }
