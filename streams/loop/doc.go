// Package loop is the one shape of periodic work in streamcrawl: Every runs a task at a
// fixed interval until its context ends, Paced runs one that picks its own next wait, Backoff
// is the one growing, jittered delay for retries, and Errors logs a recurring failure
// at most once per interval so that an outage cannot flood the log.
//
// Every long-running component (the frontier's dispatch rounds and retry mover, the
// trimmer, the seed poller, the backlog watch, ...) has a Run(ctx) error built on Every
// or Paced: it returns nil when ctx ends, and a failing round is logged and tried again
// on the next tick, never a reason to stop. Each lives in one file: loop.go (Every,
// Paced, Stop), backoff.go (Backoff), errors.go (Errors).
package loop
