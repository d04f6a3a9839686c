// Command streamcrawl-bench is streamcrawl's benchmark and chaos tooling: crawls of the
// demo shop and of a broad loopback web timed and costed, dedup pushed on its own, and
// worker processes killed mid-crawl with the outcome checked against the site's truth.
// It starts its worker processes from its own binary, which runs streamcrawl's fetch,
// parse, store and demo-site commands (hidden from its help).
package main

import (
	"os"

	"github.com/streamcrawl/streamcrawl/cmd/internal/cli"
)

func main() {
	ctx, stop := cli.Process()
	code := Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
