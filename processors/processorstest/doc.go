// Package processorstest holds what the tests of sinks need: the contract suite every
// sink runs, and real, throw-away PostgreSQL servers.
//
// TestSink (sink.go, its cases in sink_cases.go) runs the contract of processors.Sink
// against a sink, like Watermill's tests.TestPubSub for a Pub/Sub: Store durable on
// return, idempotent by item key, safe for concurrent use with duplicates among the
// calls, Close flushing and returning promptly once its ctx has ended. SinkFeatures
// declares what the sink does beyond that (Reopen: a new sink on the same target sees
// what the old stored, so a redelivery after a crash is not written twice; Versions and
// OlderVersionsRefused: versioned items; RefusesMissingKey). The suite checks what a
// target holds from outside the sink, through the SinkTarget's ReadBack. The JSONL, CSV
// and PostgreSQL sinks run it (processors/contract_test.go); example_test.go here shows
// a minimal in-memory sink passing it.
//
// StartPostgres (postgres.go) starts a PostgreSQL server on a free loopback port, in a
// new cluster removed when the test ends; Kill and Restart crash and recover it. It
// never mocks the database: the machine needs the PostgreSQL server binaries (Debian:
// apt-get install postgresql).
package processorstest
