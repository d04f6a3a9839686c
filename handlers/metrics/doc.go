// Package metrics exposes a streamcrawl process to Prometheus.
//
// A process's own figures (stage messages, fetch outcomes and latency, items stored,
// dead letters, reclaims, Redis round trips, Go runtime and process memory) live in a
// Metrics, fed by the handlers' counters, a Watermill middleware, a go-redis hook and an
// instrumented HTTP transport. Figures of the crawl as a whole (stream lengths, lag,
// pending, bytes, frontier size, dead letters) are read from Redis at scrape time by one
// CrawlCollector, served by one process (`streamcrawl exporter`, the dashboard or a
// single-process crawl), not by every worker, through a Sampler (sampler.go) that the
// // dashboard of the same process shares: one read per interval between them. A fleet
// collector (NewFleetCollector, fleet.go) follows the crawls of a fleet's registry as
// they come and go, with each crawl's state and the fleet's ready fetch work. Serve
// serves /metrics, /healthz and /readyz.
package metrics
