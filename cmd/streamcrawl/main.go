// Command streamcrawl is the distributed crawler: every stage as its own service, or all
// of them in one process, sharing a crawl through Redis Streams.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/streamcrawl/streamcrawl/streams"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	streams.QuietRedisLog() // components log Redis failures themselves, rate-limited
	os.Exit(Run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}
