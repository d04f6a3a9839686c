package metrics

import (
	"regexp"
	"sort"

	"github.com/prometheus/client_golang/prometheus"
)

var fqNameRE = regexp.MustCompile(`fqName: "([^"]+)"`)

// Names returns the name of every metric a process's Metrics and a CrawlCollector can
// export (histograms by their base name), sorted: for checking dashboards and alerts
// against what exists.
func Names() []string {
	seen := map[string]bool{}
	ch := make(chan *prometheus.Desc, 64)
	go func() {
		m := New(Config{})
		for _, c := range m.own {
			c.Describe(ch)
		}
		(&CrawlCollector{}).Describe(ch)
		newBrowserCollector(nil).Describe(ch)
		close(ch)
	}()
	for d := range ch {
		if s := fqNameRE.FindStringSubmatch(d.String()); s != nil {
			seen[s[1]] = true
		}
	}
	if mfs, err := New(Config{}).reg.Gather(); err == nil { // the Go and process collectors
		for _, mf := range mfs {
			seen[mf.GetName()] = true
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
