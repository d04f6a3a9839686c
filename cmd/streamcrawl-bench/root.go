package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/streamcrawl/streamcrawl/cmd/internal/cli"
)

// app is the command line's state: streamcrawl's (global flags, Redis, logger).
type app struct{ *cli.App }

// Run runs the streamcrawl-bench command line args and returns the exit code.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	a := &app{cli.New(stdout, stderr)}
	return a.Execute(ctx, a.rootCommand(), args)
}

// rootCommand is streamcrawl-bench's command tree: the tooling, and the worker commands
// (hidden) that it runs as its own children.
func (a *app) rootCommand() *cobra.Command {
	root := a.NewRoot("streamcrawl-bench", "Benchmarks and chaos runs of streamcrawl",
		`streamcrawl-bench measures streamcrawl and tries to break it: bench, bench-scale and
bench-broad crawl loopback sites and print pages/s, CPU, memory and Redis cost per page;
bench-dedup pushes URLs through dedup alone; bench-frontier seeds a big frontier and
weighs it; bench-render crawls a JavaScript site in a
browser beside Crawlee; bench-peers crawls the demo shop with streamcrawl, Colly and
Crawlee's CheerioCrawler in turn; bench-memory samples one crawl process's RSS and Redis's
memory as it goes; bench-latency puts a proxy that adds round-trip time between a
fetch or crawl process and Redis and prints its pages/s against none; plots draws the
docs' SVG plots from the runs recorded with --record, and
figures runs those benchmarks and plots in one go; chaos kills worker processes mid-crawl and
checks that nothing was lost; fleet runs worker processes serving many crawls and measures
items, fair share, memory and Redis cost; testprogress prints a line per ended test from go test -json (the test command
.ci/test). Worker processes are children of this binary, which runs
streamcrawl's own fetch, parse, store and demo-site commands for them.`)
	root.AddCommand(a.benchCommand(), a.benchScaleCommand(), a.benchBroadCommand(), a.benchFrontierCommand(), a.benchDedupCommand(), a.chaosCommand(),
		a.benchRenderCommand(), a.benchPeersCommand(), a.benchMemoryCommand(), a.benchLatencyCommand(), a.fleetCommand(), a.plotsCommand(), a.figuresCommand(), a.testProgressCommand())
	root.AddCommand(append(a.WorkerCommands(), a.jsSiteCommand())...)
	return root
}
