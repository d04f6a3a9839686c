package cli

import (
	"path/filepath"
	"testing"

	"github.com/streamcrawl/streamcrawl/spiders/demosite"
)

// TestPostProcessorKilledLosesNothingForItsGroup: two post-processor groups read the
// items stream beside the store group; one of them is killed (exit 137, no cleanup)
// before acking its 40th item and restarted: each group still has every item once.
func TestPostProcessorKilledLosesNothingForItsGroup(t *testing.T) {
	t.Parallel()
	site := demosite.New(300)
	c := newCluster(t, "ppshop", site)
	c.seed()
	dir := t.TempDir()
	ppArgs := func(group, consumer string) []string {
		return []string{"process", "--redis", c.srv.URL(), "--crawl", c.name, "--group", group, "--until-done",
			"--consumer", consumer, "--out", filepath.Join(dir, group+".jsonl")}
	}
	faulty := startProc(t, "warehouse-1", []string{faultEnv + "=process:40"}, ppArgs("warehouse", "warehouse-1")...)
	other := startProc(t, "search-1", nil, ppArgs("search", "search-1")...)
	procs := c.start(1, 1, 1)
	if code, ok := faulty.Wait(crawlTimeout); !ok || code != 137 {
		t.Fatalf("post-processor: exit %d (exited %v), want the fault hook's 137", code, ok)
	}
	restarted := startProc(t, "warehouse-1(start 2)", nil, ppArgs("warehouse", "warehouse-1")...)
	procs = append(procs, other, restarted)
	waitAll(t, crawlTimeout, c.rdb, c.name, procs...)
	checkExit0(t, procs...)
	want := site.ExpectedItems(c.base)
	checkItems(t, readItems(t, c.out), want, "product", "url")
	for _, g := range []string{"warehouse", "search"} {
		checkItems(t, readItems(t, filepath.Join(dir, g+".jsonl")), want, "product", "url")
	}
}
