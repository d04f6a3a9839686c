// Package handlers runs crawls: the three stages as Watermill handlers, the runner that
// wires them to Redis Streams, and the entry point that does all of it in one call.
//
//   - Crawl (crawl.go): run a spider with all stages or some, on a Redis URL or an
//     embedded Redis, with a sink, until the crawl is done or ctx ends; returns the
//     crawl's Status. The streamcrawl commands crawl, demo, fetch, parse and store use it.
//   - Run (runner.go, stages.go): the stages one process runs, from a Config. A stage
//     constructor per stage (fetch, parse, store) adds its handlers and its background
//     components (dispatcher, delayed mover, seed poller, backlog watch); every
//     component has Run(ctx) error, and Run's doc states the shutdown order.
//   - The stages: Fetch (requests to responses: politeness, robots.txt, retries,
//     redirects, proxies, cookies, conditional requests), Parse (responses to items and
//     new requests through the frontier), Store (items to a processors.Sink).
//   - Seed and the seed poller (start URLs, and seeds pushed while services run),
//     Replay (re-parse stored responses or re-deliver items in a new group), Process
//     (post-processors in a group of their own), Archive (responses to WARC files).
//
// Every handler returns only after its output is in Redis (or, for store, in the sink);
// the router then acks the input. An error or a panic nacks it: the subscriber retries it
// with backoff and, after the stage's delivery limit, moves it to dead letters with the
// error.
package handlers
