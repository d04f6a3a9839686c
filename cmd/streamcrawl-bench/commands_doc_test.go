package main

import (
	"flag"
	"io"
	"testing"

	"github.com/streamcrawl/streamcrawl/cmd/internal/cli"
	"github.com/streamcrawl/streamcrawl/cmd/internal/clitest"
)

// updateDocs rewrites docs/commands.md's tables of the bench commands:
//
//	go test ./cmd/streamcrawl-bench -run TestBenchCommandsDoc -update-docs
var updateDocs = flag.Bool("update-docs", false, "rewrite docs/commands.md's tables of the bench commands")

// TestBenchCommandsDoc checks that docs/commands.md's tables of the streamcrawl-bench
// commands and their flags are what the commands say, so they cannot drift.
func TestBenchCommandsDoc(t *testing.T) {
	root := (&app{cli.New(io.Discard, io.Discard)}).rootCommand()
	clitest.CheckGenerated(t, "../../docs/commands.md", map[string]string{
		"bench-commands": clitest.CommandsTable(root),
		"bench-flags":    clitest.FlagTables(root),
	}, *updateDocs, "go test ./cmd/streamcrawl-bench -run TestBenchCommandsDoc -update-docs")
}
