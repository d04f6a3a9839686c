package main

import (
	"io"
	"testing"

	"github.com/spf13/cobra"

	"github.com/streamcrawl/streamcrawl/cmd/internal/cli"
	"github.com/streamcrawl/streamcrawl/cmd/internal/clitest"
)

// TestDocsBenchCommands checks that every streamcrawl-bench command line of README.md
// and docs/ names a command that exists with flags it takes.
func TestDocsBenchCommands(t *testing.T) {
	pages, err := clitest.LoadPages("../..")
	if err != nil {
		t.Fatal(err)
	}
	root := (&app{cli.New(io.Discard, io.Discard)}).rootCommand()
	probs := clitest.CheckCommands(pages, map[string]*cobra.Command{"streamcrawl-bench": root})
	for _, p := range probs {
		t.Error(p)
	}
}
