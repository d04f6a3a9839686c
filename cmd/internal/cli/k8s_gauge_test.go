package cli

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders/demosite"
	"github.com/streamcrawl/streamcrawl/streams"
)

// TestExporterServesTheScaledObjectsGauge starts the exporter beside a crawl named as
// the manifests' (shop) and scrapes it: every ScaledObject's query selects a series the
// exporter serves, and streamcrawl_ready_work follows the crawl: the seed ready for
// fetch; the start page ready for parse while only a fetcher runs; items ready for
// store while no storer runs; 0 for every stage once the crawl is done.
func TestExporterServesTheScaledObjectsGauge(t *testing.T) {
	t.Parallel()
	c := newCluster(t, "shop", demosite.New(300))
	c.seed()
	ex := startProc(t, "exporter", nil, "exporter", "--redis", c.srv.URL(), "--crawl", c.name, "--metrics-addr", "127.0.0.1:0")
	addr := metricsAddr(t, ex)
	ready := func(s series) map[string]int64 {
		out := map[string]int64{}
		for _, st := range []string{streams.StageFetch, streams.StageParse, streams.StageStore} {
			out[st] = int64(s.sum("streamcrawl_ready_work", `crawl="shop"`, fmt.Sprintf(`stage="%s"`, st)))
		}
		return out
	}
	// waitReady scrapes until ok holds for the ready work, failing after a while.
	waitReady := func(what string, ok func(r map[string]int64) bool) {
		t.Helper()
		deadline := time.Now().Add(crawlTimeout)
		for {
			r := ready(scrape(t, addr))
			if ok(r) {
				t.Logf("%s: ready work %v", what, r)
				return
			}
			if time.Now().After(deadline) {
				logStatus(t, c.rdb, c.name)
				t.Fatalf("%s: ready work %v", what, r)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	// The series every ScaledObject asks for.
	s := scrape(t, addr)
	o := loadK8s(t)
	if len(o.scaledObjects) != 3 {
		t.Errorf("%d ScaledObjects, want 3", len(o.scaledObjects))
	}
	for n, so := range o.scaledObjects {
		q := so.Spec.Triggers[0].Metadata["query"]
		m := querySeriesRE.FindStringSubmatch(q)
		if m == nil {
			t.Errorf("ScaledObject %s: no metric selector in %q", n, q)
			continue
		}
		var labels []string
		for _, l := range strings.Split(m[2], ",") {
			labels = append(labels, strings.TrimSpace(l))
		}
		found := false
		for k := range s {
			base, rest, _ := strings.Cut(k, "{")
			ok := base == m[1]
			for _, l := range labels {
				ok = ok && strings.Contains(rest, l)
			}
			found = found || ok
		}
		if !found {
			t.Errorf("ScaledObject %s asks for %s{%s}: the exporter serves no such series", n, m[1], m[2])
		}
	}

	waitReady("seeded", func(r map[string]int64) bool {
		return r[streams.StageFetch] == 1 && r[streams.StageParse] == 0 && r[streams.StageStore] == 0
	})
	procs := []*proc{c.stage(streams.StageFetch, "fetch-1", nil)}
	waitReady("a fetcher alone", func(r map[string]int64) bool {
		return r[streams.StageFetch] == 0 && r[streams.StageParse] == 1 && r[streams.StageStore] == 0
	})
	procs = append(procs, c.stage(streams.StageParse, "parse-1", nil))
	waitReady("a fetcher and a parser", func(r map[string]int64) bool { return r[streams.StageStore] >= 20 })
	procs = append(procs, c.stage(streams.StageStore, "store-1", nil))
	waitAll(t, crawlTimeout, c.rdb, c.name, procs...)
	checkExit0(t, procs...)
	waitReady("done", func(r map[string]int64) bool {
		return r[streams.StageFetch] == 0 && r[streams.StageParse] == 0 && r[streams.StageStore] == 0
	})
}
