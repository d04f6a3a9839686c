// Command streamcrawl is the distributed crawler: every stage as its own service, or all
// of them in one process, sharing a crawl through Redis Streams. Its commands live in
// cmd/internal/cli; the benchmark and chaos tooling is the command streamcrawl-bench.
package main

import (
	"os"

	"github.com/streamcrawl/streamcrawl/cmd/internal/cli"
)

func main() {
	ctx, stop := cli.Process()
	code := cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
