package metrics

import (
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Namespace prefixes every metric name.
const Namespace = "streamcrawl"

// Metrics holds one process's metrics in their own registry. The zero value is not
// usable; a nil *Metrics is: every method is then a no-op, so callers need no checks.
type Metrics struct {
	reg  *prometheus.Registry
	sink string

	events        *prometheus.CounterVec
	stageHandled  *prometheus.CounterVec
	stageErrors   *prometheus.CounterVec
	stageSeconds  *prometheus.HistogramVec
	stageInFlight *prometheus.GaugeVec
	fetchStatus   *prometheus.CounterVec
	fetchOutcome  *prometheus.CounterVec
	fetchSeconds  prometheus.Histogram
	fetchBytes    prometheus.Counter
	itemsStored   *prometheus.CounterVec
	deadLetters   *prometheus.CounterVec
	reclaimed     *prometheus.CounterVec
	redisSeconds  *prometheus.HistogramVec
	redisErrors   *prometheus.CounterVec

	own []prometheus.Collector // the streamcrawl_* metrics above, for Names

	mu sync.Mutex // guards sink
}

// Config names what a process's metrics describe.
type Config struct {
	// Sink labels streamcrawl_items_stored_total (e.g. "jsonl", "csv", "postgres");
	// default "none".
	Sink string
}

// New returns the metrics of one process, with the Go runtime and process collectors
// (memory, CPU, file descriptors) registered.
func New(cfg Config) *Metrics {
	if cfg.Sink == "" {
		cfg.Sink = "none"
	}
	m := &Metrics{reg: prometheus.NewRegistry(), sink: cfg.Sink}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help}, labels)
		m.reg.MustRegister(v)
		m.own = append(m.own, v)
		return v
	}
	m.events = counter("events_total", "Crawl events counted by this process, by the name they have in the crawl's stats hash (`status` counters).", "event")
	m.stageHandled = counter("stage_messages_total", "Messages a stage handler finished (successfully or not).", "stage")
	m.stageErrors = counter("stage_errors_total", "Messages whose stage handler returned an error or panicked.", "stage")
	m.stageSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "stage_handling_seconds",
		Help: "Time a stage handler took per message.", Buckets: prometheus.ExponentialBuckets(0.0005, 2.5, 12)}, []string{"stage"})
	m.stageInFlight = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "stage_in_flight",
		Help: "Messages a stage handler is working on now."}, []string{"stage"})
	m.fetchStatus = counter("fetch_responses_total", "HTTP responses by status class (1xx..5xx).", "class")
	m.fetchOutcome = counter("fetch_outcomes_total", "What became of fetched or skipped requests: fetched, retry, dead_letter, http_error, robots, out_of_scope, politeness_wait.", "outcome")
	m.fetchSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: Namespace, Name: "fetch_duration_seconds",
		Help:    "HTTP round trips of the fetch stage, to the response headers (each redirect hop and robots.txt included).",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 12)})
	m.fetchBytes = prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "fetch_bytes_total", Help: "Body bytes downloaded (decoded)."})
	m.itemsStored = counter("items_stored_total", "Items the store stage wrote to its sink.", "sink")
	m.deadLetters = counter("dead_letters_total", "Entries this process moved to dead letters, by the group that gave up on them.", "group")
	m.reclaimed = counter("reclaimed_total", "Idle entries of other consumers this process took over.", "group")
	m.redisSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "redis_roundtrip_seconds",
		Help:    "Redis round trips by command (pipelines as \"pipeline\"); blocking reads include their block time.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 3, 11)}, []string{"cmd"})
	m.redisErrors = counter("redis_errors_total", "Redis round trips that failed, by command and kind: network (timeouts, broken connections) or reply (an error the server answered). Nil replies and NOSCRIPT are not failures.", "cmd", "kind")
	m.own = append(m.own, m.stageSeconds, m.stageInFlight, m.fetchSeconds, m.fetchBytes, m.redisSeconds)
	m.reg.MustRegister(m.stageSeconds, m.stageInFlight, m.fetchSeconds, m.fetchBytes, m.redisSeconds,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry is where the metrics are registered; register more collectors here.
func (m *Metrics) Registry() *prometheus.Registry {
	if m == nil {
		return nil
	}
	return m.reg
}

// SetSink sets the sink label of items stored from now on.
func (m *Metrics) SetSink(sink string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.sink = sink
	m.mu.Unlock()
}

// Count records n of a crawl event, as named in the crawl's stats hash; it is the hook
// of streams.Counters. Besides streamcrawl_events_total it feeds the fetch, items and
// outcome metrics the event belongs to.
func (m *Metrics) Count(event string, n int64) {
	if m == nil || n == 0 {
		return
	}
	v := float64(n)
	m.events.WithLabelValues(event).Add(v)
	if code, ok := strings.CutPrefix(event, "status_"); ok && len(code) == 3 {
		m.fetchStatus.WithLabelValues(code[:1] + "xx").Add(v)
		return
	}
	if o := outcome(event); o != "" {
		m.fetchOutcome.WithLabelValues(o).Add(v)
	}
	switch event {
	case "bytes_fetched":
		m.fetchBytes.Add(v)
	case "items_stored":
		m.mu.Lock()
		sink := m.sink
		m.mu.Unlock()
		m.itemsStored.WithLabelValues(sink).Add(v)
	}
}

// ItemStored counts one item written to the sink by a post-processor (the store stage
// counts through Count).
func (m *Metrics) ItemStored() {
	if m == nil {
		return
	}
	m.mu.Lock()
	sink := m.sink
	m.mu.Unlock()
	m.itemsStored.WithLabelValues(sink).Inc()
}

// outcome maps a stats event to a fetch outcome label, or "" when it is none.
func outcome(event string) string {
	switch event {
	case "pages_fetched":
		return "fetched"
	case "retries_scheduled":
		return "retry"
	case "retries_exhausted", "fetch_errors_final":
		return "dead_letter"
	case "http_errors_final":
		return "http_error"
	case "robots_disallowed":
		return "robots"
	case "robots_waits", "robots_turns", "host_slowdowns":
		return "politeness_wait" // the request went back to its host's queue to wait
	case "dropped_private_address":
		return "out_of_scope"
	}
	if strings.HasPrefix(event, "dropped_") && event != "dropped_max_pages" && event != "dropped_invalid" {
		return "out_of_scope" // links the parse stage dropped as out of scope
	}
	return ""
}

// SubscriberEvent is the hook of streams.SubscriberConfig.OnEvent: dead letters and
// reclaimed entries of group.
func (m *Metrics) SubscriberEvent(group, event string, n int64) {
	if m == nil || n == 0 {
		return
	}
	switch event {
	case "dead_letter":
		m.deadLetters.WithLabelValues(group).Add(float64(n))
	case "reclaimed":
		m.reclaimed.WithLabelValues(group).Add(float64(n))
	}
}
