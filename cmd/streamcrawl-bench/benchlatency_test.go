package main

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"

	"github.com/streamcrawl/streamcrawl/spiders/demosite"
)

// TestBenchLatencyCrawlsEveryRow: bench-latency crawls two small shops once per process
// and added round trip, through its proxy, and every row counts every page the shops
// have that a crawl fetches (HTML and other 200 answers; 404s and 500s are not pages);
// the PING through the proxy takes at least the round trip it adds.
func TestBenchLatencyCrawlsEveryRow(t *testing.T) {
	t.Setenv(mainEnv, "1") // the stage and crawl processes are this test binary run as the command
	const hosts, pages = 2, 60
	site := demosite.New(pages)
	want := hosts * (len(site.ReachableKind(true, demosite.HTML)) + len(site.ReachableKind(true, demosite.NonHTML)))
	code, out, errOut := run("bench-latency", "--hosts", fmt.Sprint(hosts), "--pages", fmt.Sprint(pages), "--page-size", "2000",
		"--rounds", "1", "--latencies", "0,1ms", "--log-level", "error")
	if code != 0 {
		t.Fatalf("bench-latency: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, mode := range []string{latencyFetch, latencyCrawl} {
		for _, added := range []string{"0s", "1ms"} {
			row := regexp.MustCompile(`(?m)^\| ` + mode + ` +\| +1 \| +` + added + ` \| +[0-9.]+ \| +(\d+) \|`).FindStringSubmatch(out)
			sum := regexp.MustCompile(`(?m)^\| ` + mode + ` +\| +` + added + ` \| +([0-9.]+) \| +(\d+) \| +\d+ \|`).FindStringSubmatch(out)
			if row == nil || sum == nil {
				t.Errorf("%s at %s added: no run row or no summary row:\n%s", mode, added, out)
				continue
			}
			if row[1] != fmt.Sprint(want) || sum[2] != fmt.Sprint(want) {
				t.Errorf("%s at %s added: %s pages in its run, %s in the summary; want %d:\n%s", mode, added, row[1], sum[2], want, out)
			}
			if ping, _ := strconv.ParseFloat(sum[1], 64); added == "1ms" && ping < 1 {
				t.Errorf("%s at 1ms added: PING through the proxy took %s ms, want at least 1", mode, sum[1])
			}
		}
	}
}
