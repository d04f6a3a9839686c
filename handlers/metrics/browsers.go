package metrics

import "github.com/prometheus/client_golang/prometheus"

// BrowserStats are a fetch process's browser pool figures (see browser.Stats).
type BrowserStats struct {
	// Live is the number of browsers running.
	Live int
	// Memory is their processes' proportional set size, in bytes.
	Memory int64
	// Pages counts pages rendered; Crashes browsers that died unasked; Launches
	// browsers started.
	Pages, Crashes, Launches int64
	// Retired counts browsers replaced, by reason: pages, memory, idle, and
	// memory_kill (killed while rendering, above the ceiling and its allowance).
	Retired map[string]int64
}

// WatchBrowsers exports a browser pool's figures, read from stats at each scrape:
// streamcrawl_browsers_live, streamcrawl_browser_memory_bytes,
// streamcrawl_browser_pages_total, streamcrawl_browser_launches_total,
// streamcrawl_browser_crashes_total and streamcrawl_browser_retirements_total{reason}.
func (m *Metrics) WatchBrowsers(stats func() BrowserStats) {
	if m == nil {
		return
	}
	c := newBrowserCollector(stats)
	m.reg.MustRegister(c)
	m.own = append(m.own, c)
}

func newBrowserCollector(stats func() BrowserStats) *browserCollector {
	return &browserCollector{stats: stats,
		live:     prometheus.NewDesc(Namespace+"_browsers_live", "Browsers this fetch process runs now.", nil, nil),
		memory:   prometheus.NewDesc(Namespace+"_browser_memory_bytes", "Proportional set size of this process's browsers (all their processes), as last measured.", nil, nil),
		pages:    prometheus.NewDesc(Namespace+"_browser_pages_total", "Pages rendered by this process's browsers.", nil, nil),
		launches: prometheus.NewDesc(Namespace+"_browser_launches_total", "Browsers started.", nil, nil),
		crashes:  prometheus.NewDesc(Namespace+"_browser_crashes_total", "Browsers that died without being asked (their pages were fetched again).", nil, nil),
		retired:  prometheus.NewDesc(Namespace+"_browser_retirements_total", "Browsers replaced, by reason: pages (retire_after), memory (the ceiling), idle, memory_kill (killed mid-page above the ceiling and its allowance).", []string{"reason"}, nil),
	}
}

type browserCollector struct {
	stats                                           func() BrowserStats
	live, memory, pages, launches, crashes, retired *prometheus.Desc
}

func (c *browserCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.live, c.memory, c.pages, c.launches, c.crashes, c.retired} {
		ch <- d
	}
}

func (c *browserCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	ch <- prometheus.MustNewConstMetric(c.live, prometheus.GaugeValue, float64(s.Live))
	ch <- prometheus.MustNewConstMetric(c.memory, prometheus.GaugeValue, float64(s.Memory))
	ch <- prometheus.MustNewConstMetric(c.pages, prometheus.CounterValue, float64(s.Pages))
	ch <- prometheus.MustNewConstMetric(c.launches, prometheus.CounterValue, float64(s.Launches))
	ch <- prometheus.MustNewConstMetric(c.crashes, prometheus.CounterValue, float64(s.Crashes))
	for _, reason := range []string{"pages", "memory", "idle", "memory_kill"} {
		ch <- prometheus.MustNewConstMetric(c.retired, prometheus.CounterValue, float64(s.Retired[reason]), reason)
	}
}
