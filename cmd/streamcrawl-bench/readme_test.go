package main

import (
	"flag"
	"io"
	"testing"

	"github.com/streamcrawl/streamcrawl/cmd/internal/cli"
	"github.com/streamcrawl/streamcrawl/cmd/internal/clitest"
)

// updateReadme rewrites README.md's table of the bench commands:
//
//	go test ./cmd/streamcrawl-bench -run TestREADMEBenchTable -update-readme
var updateReadme = flag.Bool("update-readme", false, "rewrite README.md's table of the bench commands")

// TestREADMEBenchTable checks that README.md's table of the streamcrawl-bench commands is
// what the commands say (their Use and Short), so it cannot drift.
func TestREADMEBenchTable(t *testing.T) {
	clitest.CheckGenerated(t, "../../README.md", map[string]string{"bench-commands": clitest.CommandsTable((&app{cli.New(io.Discard, io.Discard)}).rootCommand())},
		*updateReadme, "go test ./cmd/streamcrawl-bench -run TestREADMEBenchTable -update-readme")
}
