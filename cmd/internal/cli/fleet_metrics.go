package cli

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/handlers/fleet"
	"github.com/streamcrawl/streamcrawl/handlers/metrics"
)

// fleetCrawls lists the fleet's registered crawls for a fleet collector (the exporter
// and the dashboard without --crawl), reading the registry again only when its
// generation moved: crawls submitted or deleted show up or go at the next scrape.
func fleetCrawls(rdb redis.UniversalClient) func(ctx context.Context) ([]metrics.FleetCrawl, error) {
	w := fleet.New(rdb).Watcher()
	return func(ctx context.Context) ([]metrics.FleetCrawl, error) {
		list, err := w.List(ctx)
		if err != nil {
			return nil, err
		}
		out := make([]metrics.FleetCrawl, len(list))
		for i, c := range list {
			out[i] = metrics.FleetCrawl{Name: c.Name, State: string(c.State), Active: c.State.Active()}
		}
		return out, nil
	}
}
