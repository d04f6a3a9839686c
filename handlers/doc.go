// Package handlers holds the crawl's three stages as Watermill handlers: fetch (requests
// to responses), parse (responses to items and new requests) and store (items to a sink),
// and the runner that wires them to Redis Streams.
//
// Every handler returns only after its output is in Redis (or, for store, in the sink);
// the router then acks the input. An error or a panic nacks it: the subscriber retries it
// with backoff and, after the stage's delivery limit, moves it to dead letters with the
// error.
package handlers
