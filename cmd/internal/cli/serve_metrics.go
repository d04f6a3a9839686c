package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/handlers/metrics"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// metricsAddrHelp is the usage of --metrics-addr on every service command.
const metricsAddrHelp = "serve Prometheus /metrics, /healthz and /readyz on this address (e.g. 127.0.0.1:9100 or :9100; port 0 picks a free one, logged); off when empty"

// serveMetrics serves the process's metrics on addr until ctx ends, with a Redis hook on
// rdb and readiness from ready (plus Redis answering PING). With addr empty it does
// nothing and returns nil: every metrics hook is then off.
func (a *App) serveMetrics(ctx context.Context, addr string, rdb redis.UniversalClient, sink string, ready metrics.ReadyFunc, extra ...prometheus.Collector) (*metrics.Metrics, error) {
	if addr == "" {
		return nil, nil
	}
	m := metrics.New(metrics.Config{Sink: sink})
	for _, c := range extra {
		if err := m.Registry().Register(c); err != nil {
			return nil, fmt.Errorf("metrics: register: %w", err)
		}
	}
	rdb.AddHook(m.RedisHook())
	readyAll := func(ctx context.Context) error {
		if err := rdb.Ping(ctx).Err(); err != nil {
			return fmt.Errorf("redis: %w", err)
		}
		if ready != nil {
			return ready(ctx)
		}
		return nil
	}
	if _, err := metrics.Serve(ctx, addr, metrics.Handler(m.Registry(), readyAll), a.Log); err != nil {
		return nil, err
	}
	return m, nil
}

// groupsReady is ready once each of the crawl's stage groups exists on its input
// streams (they are created when the stages start).
func groupsReady(rdb redis.UniversalClient, crawl string, stages ...string) metrics.ReadyFunc {
	return func(ctx context.Context) error {
		l, err := streams.ReadLayout(ctx, rdb, crawl)
		if err != nil {
			return err
		}
		for _, stage := range stages {
			for _, k := range l.Parts {
				st, err := inspect.ReadGroupState(ctx, rdb, k.Input(stage), stage)
				if err != nil {
					return err
				}
				if !st.Exists {
					return fmt.Errorf("group %s of %s missing", stage, k.Input(stage))
				}
			}
		}
		return nil
	}
}

// sinkKind names a sink for the items_stored_total label: jsonl, csv, postgres, stream.
func sinkKind(out string) string {
	switch {
	case strings.HasPrefix(out, "postgres://"), strings.HasPrefix(out, "postgresql://"):
		return "postgres"
	case out == "stream":
		return "stream"
	case strings.EqualFold(filepath.Ext(out), ".csv"):
		return "csv"
	}
	return "jsonl"
}
