package handlers_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/handlers/fleet"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/spiders/broadsite"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// BenchmarkSharedHostGate measures what the hosts' fleet-wide gate costs in Redis per
// page (INFO commandstats of the whole run: every command Redis ran, those of scripts
// included, and the µs it spent in them), for crawls of a broad web (20 hosts of 20
// pages, one request at a time per host, no delay): one crawl with the gate off (the
// single-spider cost), with SharedHosts set but sharing no host (a fleet crawl whose
// hosts nobody else reaches), and with every host shared; then two crawls of the same
// web, off and on (the gate's waits included); then two crawls of 4 hosts of 6 pages
// with a delay of 300ms, where the crawls wait for each other at the gate (its polls
// included).
func BenchmarkSharedHostGate(b *testing.B) {
	none := func([]*spiders.Spider) func(string) bool { return func(string) bool { return false } }
	type size struct {
		hosts, pages int
		delay        time.Duration
	}
	broad, paced := size{20, 20, 0}, size{4, 6, 300 * time.Millisecond}
	for _, c := range []struct {
		name   string
		crawls int
		shared func([]*spiders.Spider) func(string) bool // nil: the gate is off
		size
	}{{"one-crawl-off", 1, nil, broad}, {"one-crawl-nothing-shared", 1, none, broad}, {"one-crawl-all-shared", 1, fleet.SharedHosts, broad},
		{"two-crawls-off", 2, nil, broad}, {"two-crawls-on", 2, fleet.SharedHosts, broad},
		{"delay-two-crawls-off", 2, nil, paced}, {"delay-two-crawls-on", 2, fleet.SharedHosts, paced}} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				hosts, pages := c.hosts, c.pages
				web, err := broadsite.Start(broadsite.Config{Hosts: hosts, Pages: pages})
				if err != nil {
					b.Fatal(err)
				}
				srv := streamstest.Start(b)
				var sps []*spiders.Spider
				for i := range c.crawls {
					sp := broadSpider("bench-"+strconv.Itoa(i), web)
					sp.Settings.PerHostConcurrency, sp.Settings.PerHostDelay = 1, c.delay
					sps = append(sps, sp)
				}
				var shared func(string) bool
				if c.shared != nil {
					shared = c.shared(append([]*spiders.Spider{sps[0]}, sps...)) // as if another crawl reached every host
					if c.crawls > 1 {
						shared = c.shared(sps)
					}
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				before := commandStats(ctx, b, srv)
				var wg sync.WaitGroup
				for _, sp := range sps {
					wg.Add(1)
					go func() {
						defer wg.Done()
						if _, err := handlers.Crawl(ctx, sp, quick(handlers.Options{Redis: srv.URL(), Sink: newMemSink(), Logger: zap.NewNop(),
							SharedHosts: shared})); err != nil {
							b.Error(err)
						}
					}()
				}
				wg.Wait()
				after := commandStats(ctx, b, srv)
				cancel()
				web.Close()
				fetched := float64(c.crawls * hosts * pages)
				calls, usec := after.sub(before)
				b.ReportMetric(calls/fetched, "cmds/page")
				b.ReportMetric(usec/fetched, "redis-µs/page")
				b.ReportMetric((after.calls["evalsha"]+after.calls["eval"]-before.calls["evalsha"]-before.calls["eval"])/fetched, "scripts/page")
			}
		})
	}
}

// cmdStats is INFO commandstats: calls and µs per command.
type cmdStats struct{ calls, usec map[string]float64 }

func commandStats(ctx context.Context, b *testing.B, srv *streamstest.Server) cmdStats {
	info, err := srv.Client().Info(ctx, "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	s := cmdStats{calls: map[string]float64{}, usec: map[string]float64{}}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		name, ok2 := strings.CutPrefix(name, "cmdstat_")
		if !ok || !ok2 {
			continue
		}
		for _, kv := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			n, _ := strconv.ParseFloat(v, 64)
			switch k {
			case "calls":
				s.calls[name] = n
			case "usec":
				s.usec[name] = n
			}
		}
	}
	return s
}

// sub returns the calls and µs of every command since before, INFO itself left out.
func (s cmdStats) sub(before cmdStats) (calls, usec float64) {
	for name, n := range s.calls {
		if name == "info" {
			continue
		}
		calls += n - before.calls[name]
		usec += s.usec[name] - before.usec[name]
	}
	return calls, usec
}
