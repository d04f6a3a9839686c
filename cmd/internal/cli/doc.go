// Package cli is streamcrawl's command line: the commands an operator runs (crawl, the
// fetch, parse and store services, seed, status, dead, replay, process, archive, groups,
// demo, demo-site, exporter, dashboard, version and --version, and the fleet's submit,
// crawls, pause, resume, cancel and delete), behind Run, which cmd/streamcrawl's main
// calls.
//
// Every command given --crawl checks that the crawl exists first (connectCrawl), and
// every command that runs until done or interrupted ends an interruption the same way
// (endInterrupted in process.go): "interrupted; run the same command to resume", exit 0.
//
// The benchmark and chaos tooling (cmd/streamcrawl-bench) builds its own command tree on
// the same App: NewRoot and Execute for the global flags and exit codes, RedisFlags and
// Connect for Redis, RunFlags and Crawl for a crawl in one process, and WorkerCommands,
// the stage services, the whole crawl and the demo site it starts as children of its own
// binary.
//
// The tests run real worker processes: TestMain makes the test binary act as the
// streamcrawl binary when STREAMCRAWL_TEST_MAIN=1 (harness_test.go).
package cli
