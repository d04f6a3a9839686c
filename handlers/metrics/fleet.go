package metrics

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/streams"
)

var (
	descState = desc("crawl_state", "1 for the state the crawl is in in the fleet's registry (queued, running, paused, scheduled, "+
		"resetting, done, failed, cancelled, deleting).", "crawl", "state")
	descFleetReady = desc("fleet_ready_requests", "Requests a new fetch worker of the fleet could start at once: the ready work of "+
		"fetch (streamcrawl_ready_work{stage=\"fetch\"}) summed over the active (queued or running) crawls. What an autoscaler "+
		"scales `streamcrawl worker` on.")
)

// FleetCrawl is one crawl of a fleet's registry as a fleet collector sees it.
type FleetCrawl struct {
	// Name is the crawl's name.
	Name string
	// State is its state in the registry.
	State string
	// Active says workers serve it (queued or running): its ready requests count in
	// streamcrawl_fleet_ready_requests.
	Active bool
}

// NewFleetCollector returns a collector of every crawl that list returns at each
// scrape (a fleet's registry, read again only when it changed: see fleet.Watcher):
// the figures of NewCrawlCollector for each crawl that has keys (a crawl submitted and
// never served has none yet), its state (streamcrawl_crawl_state) and the fleet's ready
// fetch work (streamcrawl_fleet_ready_requests). ctx bounds every Redis read it makes.
// log may be nil.
func NewFleetCollector(ctx context.Context, s *Sampler, list func(ctx context.Context) ([]FleetCrawl, error), log *zap.Logger) *CrawlCollector {
	c := NewCrawlCollector(ctx, s, nil, log)
	c.fleet = list
	return c
}

// collectFleet sends the figures of every crawl of the fleet, its state and the fleet's
// ready fetch work.
func (c *CrawlCollector) collectFleet(ctx context.Context, ch chan<- prometheus.Metric) {
	list, err := c.fleet(ctx)
	if err != nil {
		c.log.Warn("metrics: list the fleet's crawls", zap.Error(err))
		return
	}
	names := make(map[string]bool, len(list))
	for _, fc := range list {
		names[fc.Name] = true
	}
	c.s.retain(names)
	var ready int64
	for _, fc := range list {
		ch <- prometheus.MustNewConstMetric(descState, prometheus.GaugeValue, 1, fc.Name, fc.State)
		// EXISTS, not a read of the layout: a missing crawl is no error here.
		n, err := c.s.rdb.Exists(ctx, streams.NewKeys(fc.Name).Meta).Result()
		if err == nil && n == 0 {
			continue // no keys yet: nothing to read
		}
		if err == nil {
			var smp Sample
			if smp, err = c.s.Read(ctx, fc.Name); err == nil {
				c.sendCrawl(fc.Name, smp, ch)
				if fc.Active {
					ready += ReadyWork(smp.Status)[streams.StageFetch]
				}
			}
		}
		if err != nil {
			c.log.Warn("metrics: read crawl status", zap.String("crawl", fc.Name), zap.Error(err))
		}
		ch <- prometheus.MustNewConstMetric(descUp, prometheus.GaugeValue, b2f(err == nil), fc.Name)
	}
	ch <- prometheus.MustNewConstMetric(descFleetReady, prometheus.GaugeValue, float64(ready))
}
