package main

import (
	"context"
	"os"
	"strings"
	"testing"
)

func TestZZBench1M(t *testing.T) {
	args := strings.Fields(os.Getenv("BENCH_ARGS"))
	if len(args) == 0 { t.Skip() }
	a := &app{stdout: os.Stdout, stderr: os.Stderr, logLevel: "error", logFormat: "console"}
	if err := a.setupLogger(); err != nil { t.Fatal(err) }
	cmd := a.benchDedupCommand()
	cmd.SetArgs(args)
	if err := cmd.ExecuteContext(context.Background()); err != nil { t.Fatal(err) }
}
