package metrics

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// DefaultScrapeTimeout bounds the Redis reads of one scrape of a CrawlCollector.
const DefaultScrapeTimeout = 10 * time.Second

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(Namespace+"_"+name, help, labels, nil)
}

var (
	descUp          = desc("crawl_scrape_ok", "1 when the crawl's figures could be read from Redis at this scrape.", "crawl")
	descDone        = desc("crawl_done", "1 when the crawl is done (frontier empty, nothing pending or unread).", "crawl")
	descStreamLen   = desc("stream_length", "Entries in the stream (summed over partitions).", "crawl", "stream")
	descStreamBytes = desc("stream_bytes", "Redis memory of the stream (MEMORY USAGE, summed over partitions).", "crawl", "stream")
	descPending     = desc("group_pending", "Entries delivered to the group and not acked.", "crawl", "stream", "group")
	descLag         = desc("group_lag", "Entries of the stream the group has not read yet.", "crawl", "stream", "group")
	descConsumers   = desc("group_consumers", "Consumers in the group.", "crawl", "stream", "group")
	descFrontier    = desc("frontier_requests", "Requests waiting in the frontier.", "crawl")
	descDueHosts    = desc("frontier_due_hosts", "Hosts of the frontier that may start a request now.", "crawl")
	descDelayed     = desc("delayed_requests", "Requests waiting for a retry or politeness time.", "crawl")
	descQueued      = desc("queued_requests", "Requests in the requests stream not yet read by a fetcher.", "crawl")
	descDead        = desc("crawl_dead_letters", "Entries in the crawl's dead-letter streams.", "crawl")
	descSeen        = desc("crawl_seen_urls", "URLs in the crawl's dedup filter.", "crawl")
	descItems       = desc("crawl_items_stored", "Items the store stage has stored (the crawl's items_stored counter).", "crawl")
	descMemory      = desc("crawl_memory_bytes", "Redis memory of the crawl by key family.", "crawl", "family")
	descRevisits    = desc("revisits", "Revisits in the crawl's revisit schedule: scheduled in all, due now, due in the next hour, overdue (due over a minute ago).", "crawl", "when")
	descStat        = desc("crawl_counter", "The crawl's shared counters (the stats hash `status` shows), summed over every process.", "crawl", "counter")
	descRender      = desc("render_auto_mode", "render: auto's decision for a page type: 1 for the mode it is in (http, browser, learning).", "crawl", "page_type", "mode")
	descUsedMem     = desc("redis_used_memory_bytes", "Redis used_memory (summed over the masters of a cluster).")
	descMaxMem      = desc("redis_maxmemory_bytes", "Redis maxmemory (0: no limit).")
)

// CrawlCollector reports the figures of whole crawls at scrape time: streams, groups,
// frontier, dead letters, counters and Redis memory, read through a Sampler (shared
// with the dashboard of the same process: a scrape within its interval of the last read
// costs Redis nothing). Run one per deployment (in `streamcrawl exporter`, the dashboard
// or a single-process `crawl --metrics-addr`), not one per worker.
type CrawlCollector struct {
	ctx     context.Context
	s       *Sampler
	crawls  func(ctx context.Context) ([]string, error)
	fleet   func(ctx context.Context) ([]FleetCrawl, error) // set by NewFleetCollector, in place of crawls
	timeout time.Duration
	log     *zap.Logger
	mu      sync.Mutex // one scrape at a time
}

// NewCrawlCollector returns a collector for the crawls that crawls lists at each scrape,
// read through s; ctx bounds every Redis read it makes. log may be nil.
func NewCrawlCollector(ctx context.Context, s *Sampler, crawls func(ctx context.Context) ([]string, error), log *zap.Logger) *CrawlCollector {
	if log == nil {
		log = zap.NewNop()
	}
	return &CrawlCollector{ctx: ctx, s: s, crawls: crawls, timeout: DefaultScrapeTimeout, log: log}
}

// Crawls returns a crawls function for NewCrawlCollector that always lists names.
func Crawls(names ...string) func(context.Context) ([]string, error) {
	return func(context.Context) ([]string, error) { return names, nil }
}

// Describe sends the descriptors of every metric the collector may send.
func (c *CrawlCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descUp, descDone, descStreamLen, descStreamBytes, descPending, descLag,
		descConsumers, descFrontier, descDueHosts, descDelayed, descQueued, descDead, descSeen, descItems,
		descMemory, descStat, descRender, descUsedMem, descMaxMem, descReady, descRevisits, descState, descFleetReady} {
		ch <- d
	}
}

// Collect reads every crawl's status from Redis and sends it.
func (c *CrawlCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ctx, cancel := context.WithTimeout(c.ctx, c.timeout)
	defer cancel()
	var crawls []string
	var err error
	if c.fleet != nil {
		c.collectFleet(ctx, ch)
	} else if crawls, err = c.crawls(ctx); err != nil {
		c.log.Warn("metrics: list crawls", zap.Error(err))
	}
	for _, crawl := range crawls {
		err := c.collectCrawl(ctx, crawl, ch)
		if err != nil {
			c.log.Warn("metrics: read crawl status", zap.String("crawl", crawl), zap.Error(err))
		}
		ch <- prometheus.MustNewConstMetric(descUp, prometheus.GaugeValue, b2f(err == nil), crawl)
	}
	if used, limit, err := c.s.Memory(ctx); err == nil {
		ch <- prometheus.MustNewConstMetric(descUsedMem, prometheus.GaugeValue, float64(used))
		ch <- prometheus.MustNewConstMetric(descMaxMem, prometheus.GaugeValue, float64(limit))
	}
}

func (c *CrawlCollector) collectCrawl(ctx context.Context, crawl string, ch chan<- prometheus.Metric) error {
	smp, err := c.s.Read(ctx, crawl)
	if err != nil {
		return err
	}
	c.sendCrawl(crawl, smp, ch)
	return nil
}

// sendCrawl sends the figures of one read of crawl.
func (c *CrawlCollector) sendCrawl(crawl string, smp Sample, ch chan<- prometheus.Metric) {
	st := smp.Status
	f := FrontierOf(st)
	gauge := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), append([]string{crawl}, labels...)...)
	}
	gauge(descDone, int64(b2f(st.Done)))
	for _, s := range st.Streams {
		name := streamKind(s.Name)
		gauge(descStreamLen, s.Length, name)
		gauge(descStreamBytes, s.Bytes, name)
		for _, g := range s.Groups {
			gauge(descPending, g.Pending, name, g.Name)
			if g.Lag >= 0 {
				gauge(descLag, g.Lag, name, g.Name)
			}
			gauge(descConsumers, g.Consumers, name, g.Name)
		}
	}
	gauge(descFrontier, f.Requests)
	if f.DueHosts >= 0 {
		gauge(descDueHosts, f.DueHosts)
	}
	gauge(descDelayed, f.Delayed)
	r := st.Revisits
	for when, n := range map[string]int64{"scheduled": r.Scheduled, "due_now": r.DueNow, "next_hour": r.NextHour, "overdue": r.Overdue} {
		gauge(descRevisits, n, when)
	}
	gauge(descQueued, st.Queued)
	gauge(descDead, st.DeadLetters)
	gauge(descSeen, st.Seen)
	gauge(descItems, st.ItemsStored)
	for stage, n := range ReadyWork(st) {
		gauge(descReady, n, stage)
	}
	for fam, n := range st.Memory {
		gauge(descMemory, n, fam)
	}
	for name, v := range st.Stats {
		ch <- prometheus.MustNewConstMetric(descStat, prometheus.CounterValue, float64(v), crawl, name)
	}
	for _, r := range st.Render {
		mode := r.Mode
		if mode == "" {
			mode = "learning"
		}
		gauge(descRender, 1, r.PageType, mode)
	}
}

// RedisMemory returns Redis's used_memory and maxmemory, summed over the masters of a
// cluster.
func RedisMemory(ctx context.Context, rdb redis.UniversalClient) (used, limit int64, err error) {
	read := func(ctx context.Context, c *redis.Client) error {
		f, err := inspect.InfoNumbers(ctx, c, "memory")
		if err != nil {
			return err
		}
		used += int64(f["used_memory"])
		limit += int64(f["maxmemory"])
		return nil
	}
	if sc, ok := rdb.(*streams.Client); ok {
		rdb = sc.UniversalClient
	}
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		var mu sync.Mutex
		err = c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			mu.Lock()
			defer mu.Unlock()
			return read(ctx, n)
		})
	case *redis.Client:
		err = read(ctx, c)
	default:
		err = fmt.Errorf("metrics: cannot read memory through a %T", rdb)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("metrics: redis memory: %w", err)
	}
	return used, limit, nil
}

// streamKind is the last part of a stream key: requests, responses, items, dead.
func streamKind(key string) string { return key[strings.LastIndexByte(key, ':')+1:] }

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
